import type { ReactNode } from 'react';
import { TableHead } from './TableHead';

/** A list as a table: a caption for screen readers, then TableHead's column headers (and "Actions" column) and the rows. */
export function ListTable({ caption, columns, actions = false, children }: { caption: string; columns: readonly string[]; actions?: boolean; children: ReactNode }) {
  return (
    <table>
      <caption className="visually-hidden">{caption}</caption>
      <TableHead columns={columns} actions={actions} />
      <tbody>{children}</tbody>
    </table>
  );
}

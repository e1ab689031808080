import type { ReactNode } from 'react';

/** A list as a table: a caption for screen readers, one header per column, and a last unnamed-on-screen "Actions" column when rows have buttons. */
export function ListTable({ caption, columns, actions = false, children }: { caption: string; columns: readonly string[]; actions?: boolean; children: ReactNode }) {
  return (
    <table>
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c} scope="col">
              {c}
            </th>
          ))}
          {actions && (
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          )}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}

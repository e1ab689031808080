import { useEffect, useRef } from 'react';
import { Button } from 'react-aria-components';
import { formatValue, type Flag } from '../../api';
import { diffJson, FIELD_LABELS, flagChanges, type EditableField, type FieldChange, type FlagDraft, changedFields } from './draft';

/** One field's change as leaf paths, before -> after. */
export function FieldDiff({ change, label }: { change: FieldChange; label?: string }) {
  const rows = diffJson(change.from, change.to, change.field);
  return (
    <table className="diff">
      <caption>{label ?? FIELD_LABELS[change.field as EditableField] ?? change.field}</caption>
      <thead>
        <tr>
          <th scope="col">Path</th>
          <th scope="col">Before</th>
          <th scope="col">After</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.path}>
            <td>
              <code>{r.path}</code>
            </td>
            <td className="diff-from">{'from' in r ? <code>{formatValue(r.from)}</code> : <span className="muted">(none)</span>}</td>
            <td className="diff-to">{'to' in r ? <code>{formatValue(r.to)}</code> : <span className="muted">(removed)</span>}</td>
          </tr>
        ))}
        {rows.length === 0 && (
          <tr>
            <td colSpan={3}>
              <code>{formatValue(change.from as never)}</code> → <code>{formatValue(change.to as never)}</code>
            </td>
          </tr>
        )}
      </tbody>
    </table>
  );
}

/**
 * The 412 answer made useful: what someone else changed since this page read the flag (field by
 * field), which of those fields the user also edited, and a way to reapply the user's edits on top
 * of the server's version (or to drop them).
 */
export function ConflictPanel({ base, server, baseDraft, draft, onReapply, onDiscard }: { base: Flag; server: Flag; baseDraft: FlagDraft; draft: FlagDraft; onReapply: () => void; onDiscard: () => void }) {
  return (
    <ConflictNotice
      what="flag"
      versions={[base.version, server.version]}
      theirs={flagChanges(base, server)}
      mine={Object.keys(changedFields(baseDraft, draft))}
      label={(f) => FIELD_LABELS[f as EditableField] ?? f}
      onReapply={onReapply}
      onDiscard={onDiscard}
    />
  );
}

/** The conflict of any versioned draft (a flag's, a segment's): the server's changes, the user's, and what to do. */
export function ConflictNotice({
  what,
  versions,
  theirs,
  mine,
  label,
  onReapply,
  onDiscard,
}: {
  what: string;
  versions: [string | number, string | number];
  theirs: FieldChange[];
  mine: string[];
  label: (field: string) => string;
  onReapply: () => void;
  onDiscard: () => void;
}) {
  const both = mine.filter((f) => theirs.some((c) => c.field === f));
  // Below the form: bring it into view (and keyboard focus to it) when it appears.
  const title = useRef<HTMLHeadingElement>(null);
  useEffect(() => title.current?.focus(), []);
  return (
    <section role="alert" className="state error conflict" aria-labelledby="conflict-title">
      <h2 id="conflict-title" tabIndex={-1} ref={title}>
        The {what} changed on the server
      </h2>
      <p>
        Someone saved this {what} after you opened it (version {versions[0]} → {versions[1]}), so your changes were not saved. Here is what changed on the server:
      </p>
      {theirs.length === 0 ? <p>No field this page edits changed (only the version).</p> : theirs.map((c) => <FieldDiff key={c.field} change={c} label={label(c.field)} />)}
      <p>
        Your unsaved edits: {mine.map(label).join(', ') || 'none'}.
        {both.length > 0 && <strong> Also changed on the server: {both.map(label).join(', ')}: reapplying replaces the server’s value with yours.</strong>}
      </p>
      <div className="actions">
        <Button className="react-aria-Button primary" onPress={onReapply}>
          Reapply my edits on the new version
        </Button>
        <Button onPress={onDiscard}>Discard my edits</Button>
      </div>
    </section>
  );
}

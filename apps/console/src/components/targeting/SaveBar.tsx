import type { ReactNode } from 'react';
import { Button } from 'react-aria-components';
import type { DraftCheck } from './checks';
import { Problems } from './Problems';

/**
 * The bar under a draft (a flag's, a segment's): what is unsaved (or what was just saved), the
 * check's errors to fix first, Save and Discard. `notes` adds the editor's own remarks.
 */
export function SaveBar({
  unsaved,
  saved,
  check,
  notes = [],
  blocked,
  pending,
  onSave,
  onDiscard,
  saveLabel = 'Save changes',
  children,
}: {
  /** Labels of the changed fields. */
  unsaved: readonly string[];
  saved: string | null;
  check: DraftCheck;
  notes?: readonly (string | false)[];
  blocked: boolean;
  pending: boolean;
  onSave: () => void;
  onDiscard: () => void;
  /** What saving does here (an environment that requires approval sends a change request instead). */
  saveLabel?: string;
  children?: ReactNode;
}) {
  return (
    <div className="save-bar" role="region" aria-label="Save changes">
      <p aria-live="polite">
        {unsaved.length === 0 ? (saved ?? 'No unsaved changes.') : `Unsaved: ${unsaved.join(', ')}.`}
        {check.errors.length > 0 && ` ${check.errors.length} error${check.errors.length > 1 ? 's' : ''} to fix first.`}
        {notes.filter((n): n is string => n !== false).map((n) => ` ${n}`)}
      </p>
      {check.errors.length > 0 && <Problems errors={check.errors} />}
      <Button className="react-aria-Button primary" isDisabled={blocked} onPress={onSave}>
        {pending ? 'Saving…' : saveLabel}
      </Button>
      <Button isDisabled={unsaved.length === 0 || pending} onPress={onDiscard}>
        Discard changes
      </Button>
      {children}
    </div>
  );
}

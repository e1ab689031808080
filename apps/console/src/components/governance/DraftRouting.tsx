import { Button, Label, TextArea, TextField } from 'react-aria-components';
import { useId } from 'react';

/** A labelled `datetime-local` field: the browser's own picker, in the user's time zone. */
export function LocalTimeField({ label, value, onChange, description }: { label: string; value: string; onChange: (v: string) => void; description?: string }) {
  const id = useId();
  return (
    <div className="react-aria-TextField">
      <label htmlFor={id}>{label}</label>
      <input id={id} type="datetime-local" value={value} onChange={(e) => onChange(e.target.value)} aria-describedby={description ? `${id}-d` : undefined} />
      {description && (
        <span id={`${id}-d`} className="muted">
          {description}
        </span>
      )}
    </div>
  );
}

/**
 * Shown above the save bar where the environment requires approval: the edits go out as a change
 * request, with a comment for the approver and, optionally, the time the approved change applies.
 */
export function ChangeRequestFields({ reason, comment, onComment, applyAt, onApplyAt }: { reason: string; comment: string; onComment: (v: string) => void; applyAt: string; onApplyAt: (v: string) => void }) {
  return (
    <section className="panel approval-note" aria-labelledby="approval-title">
      <h2 id="approval-title">{reason}</h2>
      <p>Saving sends your edits as a change request: another member approves it, then it is applied (at the time below, when you give one).</p>
      <TextField value={comment} onChange={onComment} maxLength={2000}>
        <Label>Comment for the approver</Label>
        <TextArea rows={2} />
      </TextField>
      <LocalTimeField label="Apply at (optional)" value={applyAt} onChange={onApplyAt} description="Leave empty to apply as soon as it is approved." />
    </section>
  );
}

/** Beside the save bar elsewhere: the same edits written later, once, by the server. */
export function ScheduleFields({ at, onAt, blocked, pending, onSchedule }: { at: string; onAt: (v: string) => void; blocked: boolean; pending: boolean; onSchedule: () => void }) {
  return (
    <div className="schedule-fields" role="group" aria-label="Schedule changes">
      <LocalTimeField label="Schedule for" value={at} onChange={onAt} />
      <Button isDisabled={blocked || at === '' || pending} onPress={onSchedule}>
        {pending ? 'Scheduling…' : 'Schedule changes'}
      </Button>
    </div>
  );
}

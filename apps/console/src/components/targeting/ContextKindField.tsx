import { useState } from 'react';
import { FieldError, Input, Label, TextField } from 'react-aria-components';
import { contextKindProblem, USER_KIND } from '../../api';
import { ChoiceSelect } from '../ChoiceSelect';

const OTHER = '__other__';
/** Kinds offered before any is used: LaunchDarkly's default and the two its documentation names first. */
export const COMMON_KINDS = [USER_KIND, 'organization', 'device'];

/** The kinds to offer: the common ones (`user` first), then every other kind already in use, sorted. */
export function kindsToOffer(used: Iterable<string | undefined>): string[] {
  const rest = [...new Set(used)].filter((k): k is string => k !== undefined && !COMMON_KINDS.includes(k) && contextKindProblem(k) === null);
  return [...COMMON_KINDS, ...rest.sort((a, b) => a.localeCompare(b))];
}

/**
 * A context kind: chosen from the kinds in use, or typed ("Other kind…") and checked as LaunchDarkly
 * checks a kind. A typed kind is passed on as it is typed, so the draft's own check (the API's) also
 * refuses a bad one; the message here says why at once.
 */
export function ContextKindField({ label, value, kinds, onChange }: { label: string; value: string; kinds: readonly string[]; onChange: (kind: string) => void }) {
  const [other, setOther] = useState(() => !kinds.includes(value));
  const [text, setText] = useState(() => (kinds.includes(value) ? '' : value));
  const problem = other ? contextKindProblem(text.trim()) : null;
  return (
    <div className="context-kind">
      <ChoiceSelect
        label={label}
        value={other ? OTHER : value}
        options={[...kinds.map((k) => ({ id: k, name: k })), { id: OTHER, name: 'Other kind…' }]}
        onChange={(k) => {
          setOther(k === OTHER);
          if (k !== OTHER) onChange(k);
          else if (text !== '') onChange(text);
        }}
      />
      {other && (
        <TextField
          value={text}
          isInvalid={problem !== null}
          onChange={(t) => {
            setText(t);
            onChange(t.trim());
          }}
        >
          <Label>{label}: other kind</Label>
          <Input placeholder="account, team…" />
          <FieldError>{problem}</FieldError>
        </TextField>
      )}
    </div>
  );
}

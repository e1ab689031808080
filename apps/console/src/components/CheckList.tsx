import type { ReactNode } from 'react';
import { Checkbox, CheckboxGroup, FieldError, Label } from 'react-aria-components';

/** A labelled group of checkboxes, one per option (`name` matches the API's field for its 422s). */
export function CheckList<T extends string>({
  label,
  name,
  options,
  value,
  onChange,
  isDisabled,
  note,
  validate,
}: {
  label: string;
  name: string;
  options: readonly T[];
  value: T[];
  onChange: (v: T[]) => void;
  isDisabled: boolean;
  note?: (option: T) => ReactNode;
  validate?: (v: string[]) => string | null;
}) {
  return (
    <CheckboxGroup name={name} value={value} onChange={(v) => onChange(v as T[])} isDisabled={isDisabled} validate={validate} className="checks">
      <Label>{label}</Label>
      {options.map((o) => (
        <Checkbox key={o} value={o}>
          <span className="box" aria-hidden="true" />
          {o}
          {note?.(o)}
        </Checkbox>
      ))}
      <FieldError />
    </CheckboxGroup>
  );
}

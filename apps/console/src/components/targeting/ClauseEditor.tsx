import { useState } from 'react';
import { Button, Checkbox, Input, Label, Text, TextArea, TextField } from 'react-aria-components';
import type { Clause, ClauseOperator } from '../../api';
import { ChoiceSelect } from '../ChoiceSelect';
import { formatClauseValue, OPERATORS, parseClauseValues, problemsAt, valueHint, type DraftCheck } from './checks';
import { Problems } from './Problems';

/** One clause: attribute, operator (every one of CONTRACT.md section 5), values one per line, negate. */
export function ClauseEditor({
  clause,
  name,
  path,
  check,
  onChange,
  onRemove,
}: {
  clause: Clause;
  /** "Rule 1 clause 2": the group's accessible name. */
  name: string;
  path: string;
  check: DraftCheck;
  onChange: (c: Clause) => void;
  onRemove: () => void;
}) {
  const [text, setText] = useState(() => clause.values.map((v) => formatClauseValue(clause.op, v)).join('\n'));
  const setOp = (op: ClauseOperator) => onChange({ ...clause, op, values: parseClauseValues(op, text) });
  const warnings = problemsAt(check.warnings, path);
  const errors = problemsAt(check.errors, path);
  return (
    <fieldset className="clause" aria-label={name}>
      <legend className="visually-hidden">{name}</legend>
      <TextField value={clause.attribute} onChange={(attribute) => onChange({ ...clause, attribute })} isRequired>
        <Label>Attribute</Label>
        <Input placeholder="country, email, key…" />
      </TextField>
      <Checkbox isSelected={clause.negate === true} onChange={(negate) => onChange({ ...clause, negate })}>
        <div className="checkbox" aria-hidden="true" />
        Not (negate)
      </Checkbox>
      <ChoiceSelect label="Operator" value={clause.op} options={OPERATORS.map((o) => ({ id: o.op, name: o.label }))} onChange={setOp} />
      <TextField
        value={text}
        onChange={(t) => {
          setText(t);
          onChange({ ...clause, values: parseClauseValues(clause.op, t) });
        }}
        className="react-aria-TextField values"
      >
        <Label>Values</Label>
        <TextArea rows={Math.min(6, Math.max(2, clause.values.length + 1))} className="react-aria-TextArea code" />
        <Text slot="description" className="muted">
          {valueHint(clause.op)}
        </Text>
      </TextField>
      <Button onPress={onRemove} aria-label={`Remove ${name.toLowerCase()}`} className="react-aria-Button small">
        Remove clause
      </Button>
      <Problems errors={errors} warnings={warnings} />
    </fieldset>
  );
}

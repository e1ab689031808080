import { useState } from 'react';
import { Button, Checkbox, CheckboxGroup, Input, Label, Text, TextArea, TextField } from 'react-aria-components';
import { USER_KIND, type Clause, type ClauseOperator } from '../../api';
import { ChoiceSelect } from '../ChoiceSelect';
import { formatClauseValue, OPERATORS, parseClauseValues, problemsAt, valueHint, type DraftCheck } from './checks';
import { ContextKindField } from './ContextKindField';
import { Problems } from './Problems';

export const newClause = (): Clause => ({ attribute: '', op: 'in', values: [], negate: false });

/** A rule's clauses (all must match), each editable and removable, and a button to add one: a flag rule's and a segment rule's. */
export function ClauseList({
  clauses,
  rule,
  path,
  check,
  kinds,
  segments,
  revision,
  onChange,
}: {
  clauses: readonly Clause[];
  /** The rule's number, from 1. */
  rule: number;
  /** The rule's path (`rules[0]`). */
  path: string;
  check: DraftCheck;
  kinds: readonly string[];
  segments: readonly SegmentChoice[] | undefined;
  /** Bumped when the draft is replaced, so the value boxes reread it. */
  revision: number;
  onChange: (clauses: Clause[]) => void;
}) {
  return (
    <>
      {clauses.length === 0 && <p className="muted">No clauses: this rule matches every context.</p>}
      {clauses.map((c, i) => (
        <ClauseEditor
          key={`${revision}-${i}-${clauses.length}`}
          clause={c}
          name={`Rule ${rule} clause ${i + 1}`}
          path={`${path}.clauses[${i}]`}
          check={check}
          kinds={kinds}
          segments={segments}
          onChange={(x) => onChange(clauses.map((y, k) => (k === i ? x : y)))}
          onRemove={() => onChange(clauses.filter((_, k) => k !== i))}
        />
      ))}
      <Button onPress={() => onChange([...clauses, newClause()])} aria-label={`Add clause to rule ${rule}`} className="react-aria-Button small">
        Add clause
      </Button>
    </>
  );
}

/** A segment a segmentMatch clause may name: those of the flag's (or segment's) environment. */
export interface SegmentChoice {
  key: string;
  name: string;
}

/**
 * A clause's kind as the selector shows it (absent reads `user`), and back: `user` stays absent unless
 * the attribute is a /reference, which needs a kind to be read as one (LaunchDarkly's rule).
 */
export const kindOfClause = (c: Pick<Clause, 'contextKind'>): string => c.contextKind ?? USER_KIND;
export const withKind = (c: Clause, kind: string): Clause => {
  const { contextKind: _old, ...rest } = c;
  return kind === USER_KIND && !c.attribute.startsWith('/') ? rest : { ...rest, contextKind: kind };
};

/**
 * One clause: context kind, attribute, operator (every one of CONTRACT.md section 5, and segmentMatch
 * with the environment's segments to choose from), values one per line, negate.
 */
export function ClauseEditor({
  clause,
  name,
  path,
  check,
  kinds,
  segments,
  onChange,
  onRemove,
}: {
  clause: Clause;
  /** "Rule 1 clause 2": the group's accessible name. */
  name: string;
  path: string;
  check: DraftCheck;
  /** The context kinds to offer. */
  kinds: readonly string[];
  /** The environment's segments, for segmentMatch; undefined while they load. */
  segments: readonly SegmentChoice[] | undefined;
  onChange: (c: Clause) => void;
  onRemove: () => void;
}) {
  const [text, setText] = useState(() => clause.values.map((v) => formatClauseValue(clause.op, v)).join('\n'));
  const setOp = (op: ClauseOperator) => onChange({ ...clause, op, values: op === 'segmentMatch' || clause.op === 'segmentMatch' ? [] : parseClauseValues(op, text) });
  const warnings = problemsAt(check.warnings, path);
  const errors = problemsAt(check.errors, path);
  const bySegment = clause.op === 'segmentMatch';
  return (
    <fieldset className="clause" aria-label={name}>
      <legend className="visually-hidden">{name}</legend>
      {!bySegment && (
        <>
          <ContextKindField label="Context kind" value={kindOfClause(clause)} kinds={kinds} onChange={(k) => onChange(withKind(clause, k))} />
          <TextField value={clause.attribute} onChange={(attribute) => onChange({ ...clause, attribute })} isRequired>
            <Label>Attribute</Label>
            <Input placeholder="country, email, key…" />
          </TextField>
        </>
      )}
      <Checkbox isSelected={clause.negate === true} onChange={(negate) => onChange({ ...clause, negate })}>
        <div className="checkbox" aria-hidden="true" />
        Not (negate)
      </Checkbox>
      <ChoiceSelect label="Operator" value={clause.op} options={OPERATORS.map((o) => ({ id: o.op, name: o.label }))} onChange={setOp} />
      {bySegment ? (
        <SegmentValues clause={clause} segments={segments} onChange={(values) => onChange({ ...clause, values })} />
      ) : (
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
      )}
      <Button onPress={onRemove} aria-label={`Remove ${name.toLowerCase()}`} className="react-aria-Button small">
        Remove clause
      </Button>
      <Problems errors={errors} warnings={warnings} />
    </fieldset>
  );
}

/** segmentMatch's values: segment keys, ticked from the environment's segments (a key no segment has stays listed, to untick). */
function SegmentValues({ clause, segments, onChange }: { clause: Clause; segments: readonly SegmentChoice[] | undefined; onChange: (keys: string[]) => void }) {
  const chosen = clause.values.filter((v): v is string => typeof v === 'string');
  const known = new Set((segments ?? []).map((s) => s.key));
  const options = [...(segments ?? []).map((s) => ({ key: s.key, label: `${s.name} (${s.key})` })), ...chosen.filter((k) => !known.has(k)).map((k) => ({ key: k, label: `${k} (no such segment)` }))];
  return (
    <CheckboxGroup className="checks segments-choice" value={chosen} onChange={onChange}>
      <Label>Segments</Label>
      {options.map((o) => (
        <Checkbox key={o.key} value={o.key}>
          <span className="box" aria-hidden="true" />
          {o.label}
        </Checkbox>
      ))}
      <Text slot="description" className="muted">
        {segments === undefined ? 'Loading segments…' : options.length === 0 ? 'No segments in this environment yet: create one on the Segments page.' : valueHint('segmentMatch')}
      </Text>
    </CheckboxGroup>
  );
}

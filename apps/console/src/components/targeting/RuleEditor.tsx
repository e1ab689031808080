import { Button, Input, Label, Radio, RadioGroup, TextField } from 'react-aria-components';
import { formatValue, USER_KIND, type FlagVariation, type Rule } from '../../api';
import { ChoiceSelect } from '../ChoiceSelect';
import { problemsAt, type DraftCheck } from './checks';
import { ClauseList, type SegmentChoice } from './ClauseEditor';
import { Problems } from './Problems';
import { RolloutEditor } from './RolloutEditor';
import { evenWeights } from './weights';

export const variationLabel = (v: FlagVariation): string => `${v.name} (${formatValue(v.value)})`;

/** A rollout's weights in the variations' order (a variation the rollout does not name weighs 0). */
export const weightsOf = (variations: readonly FlagVariation[], rollout: NonNullable<Rule['rollout']>): number[] =>
  variations.map((v) => rollout.variations.filter((w) => w.variationId === v.id).reduce((s, w) => s + w.weight, 0));

export const rolloutFrom = (variations: readonly FlagVariation[], weights: number[], rest: Omit<NonNullable<Rule['rollout']>, 'variations'>): NonNullable<Rule['rollout']> => ({
  ...rest,
  variations: variations.map((v, i) => ({ variationId: v.id, weight: weights[i] ?? 0 })),
});


/** One rule: its clauses (all must match), then a variation or a percentage rollout; moved and removed from here. */
export function RuleEditor({
  rule,
  index,
  count,
  variations,
  check,
  revision,
  kinds,
  segments,
  onChange,
  onMove,
  onRemove,
}: {
  rule: Rule;
  index: number;
  count: number;
  variations: readonly FlagVariation[];
  check: DraftCheck;
  /** Bumped when the draft is replaced (reset, rebase), so the value boxes reread it. */
  revision: number;
  kinds: readonly string[];
  segments: readonly SegmentChoice[] | undefined;
  onChange: (r: Rule) => void;
  onMove: (delta: -1 | 1) => void;
  onRemove: () => void;
}) {
  const n = index + 1;
  const path = `rules[${index}]`;
  const serve = rule.rollout ? 'rollout' : 'variation';
  const ownProblems = (list: DraftCheck['errors']) => problemsAt(list, path).filter((p) => !p.path.startsWith(`${path}.clauses[`));
  return (
    <li className="rule">
      <fieldset aria-label={`Rule ${n}`}>
        <legend>Rule {n}</legend>
        <div className="rule-tools">
          <Button aria-label={`Move rule ${n} up`} isDisabled={index === 0} onPress={() => onMove(-1)} className="react-aria-Button small">
            ↑ Up
          </Button>
          <Button aria-label={`Move rule ${n} down`} isDisabled={index === count - 1} onPress={() => onMove(1)} className="react-aria-Button small">
            ↓ Down
          </Button>
          <Button aria-label={`Remove rule ${n}`} onPress={onRemove} className="react-aria-Button small danger">
            Remove rule
          </Button>
        </div>
        <TextField value={rule.description ?? ''} onChange={(description) => onChange({ ...rule, description })}>
          <Label>Description</Label>
          <Input />
        </TextField>
        <ClauseList clauses={rule.clauses} rule={n} path={path} check={check} kinds={kinds} segments={segments} revision={revision} onChange={(clauses) => onChange({ ...rule, clauses })} />
        <RadioGroup
          value={serve}
          orientation="horizontal"
          onChange={(v) => {
            if (v === 'rollout') onChange({ ...rule, variationId: undefined, rollout: rolloutFrom(variations, evenWeights(variations.length), {}) });
            else onChange({ ...rule, rollout: undefined, variationId: variations[0]?.id });
          }}
        >
          <Label>Rule {n} serves</Label>
          <Radio value="variation">A variation</Radio>
          <Radio value="rollout">A percentage rollout</Radio>
        </RadioGroup>
        {rule.rollout ? (
          <RolloutEditor
            name={`Rule ${n} rollout`}
            variations={variations}
            weights={weightsOf(variations, rule.rollout)}
            onChange={(w) => onChange({ ...rule, rollout: rolloutFrom(variations, w, { bucketBy: rule.rollout?.bucketBy, seed: rule.rollout?.seed, contextKind: rule.rollout?.contextKind }) })}
            bucketBy={rule.rollout.bucketBy}
            onBucketByChange={(b) => onChange({ ...rule, rollout: { ...rule.rollout!, bucketBy: b === '' ? undefined : b } })}
            contextKind={rule.rollout.contextKind}
            kinds={kinds}
            onContextKindChange={(k) => {
              // As on a clause: user stays absent unless bucketBy is a /reference.
              const { contextKind: _old, ...rest } = rule.rollout!;
              onChange({ ...rule, rollout: k === USER_KIND && !(rest.bucketBy ?? '').startsWith('/') ? rest : { ...rest, contextKind: k } });
            }}
          />
        ) : (
          <ChoiceSelect
            label={`Rule ${n} variation`}
            value={rule.variationId ?? ''}
            options={variations.map((v) => ({ id: v.id, name: variationLabel(v) }))}
            onChange={(variationId) => onChange({ ...rule, variationId })}
          />
        )}
        <Problems errors={ownProblems(check.errors)} warnings={ownProblems(check.warnings)} />
      </fieldset>
    </li>
  );
}

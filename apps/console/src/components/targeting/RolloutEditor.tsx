import { Button, Input, Label, NumberField, TextField } from 'react-aria-components';
import { USER_KIND, type FlagVariation } from '../../api';
import { ContextKindField } from './ContextKindField';
import { evenWeights, normalizeWeights, setWeight, sumWeights, toPercent, WEIGHT_TOTAL } from './weights';

/**
 * Percentages per variation that always add up to 100%: changing one takes the difference from (or
 * gives it to) the others in proportion to what they hold.
 */
export function RolloutEditor({
  name,
  variations,
  weights,
  onChange,
  bucketBy,
  onBucketByChange,
  contextKind,
  kinds,
  onContextKindChange,
}: {
  /** "Rule 1 rollout", "Fallthrough rollout": the group's accessible name. */
  name: string;
  variations: readonly FlagVariation[];
  /** One weight per variation, in the variations' order. */
  weights: number[];
  onChange: (weights: number[]) => void;
  bucketBy?: string;
  onBucketByChange?: (b: string) => void;
  /** The kind bucketed (absent: user), offered with bucketBy. */
  contextKind?: string;
  kinds?: readonly string[];
  onContextKindChange?: (kind: string) => void;
}) {
  // Weights as read (relative, any scale) shown as the percentages they mean.
  const shown = sumWeights(weights) === WEIGHT_TOTAL ? weights : normalizeWeights(weights);
  const total = toPercent(sumWeights(shown));
  return (
    <fieldset className="rollout" aria-label={name}>
      <legend>{name}</legend>
      <div className="rollout-rows">
        {variations.map((v, i) => (
          <NumberField
            key={v.id}
            value={toPercent(shown[i] ?? 0)}
            minValue={0}
            maxValue={100}
            step={0.001}
            formatOptions={{ maximumFractionDigits: 3 }}
            onChange={(p) => onChange(setWeight(shown, i, Number.isFinite(p) ? p : 0))}
          >
            <Label>
              {v.name} (%)
            </Label>
            <Input className="react-aria-Input percent" />
          </NumberField>
        ))}
      </div>
      <p className="muted" aria-live="polite">
        Total: {total}%
      </p>
      <Button onPress={() => onChange(evenWeights(variations.length))} className="react-aria-Button small">
        Split evenly
      </Button>
      {onContextKindChange && kinds && <ContextKindField label="Bucket by context kind" value={contextKind ?? USER_KIND} kinds={kinds} onChange={onContextKindChange} />}
      {onBucketByChange && (
        <TextField value={bucketBy ?? ''} onChange={onBucketByChange}>
          <Label>Bucket by attribute</Label>
          <Input placeholder="key" />
        </TextField>
      )}
    </fieldset>
  );
}

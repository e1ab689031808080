import { isDeepStrictEqual } from 'node:util';
import type { JsonValue } from '@flagship/domain';
import type { Variation } from '@flagship/flag-evaluation';
import type { FlagRow } from '../flags/flags.repository';

/** The variations of a bound flag and which is the control, as the report and the rollout both read them. */
export interface FlagArms {
  variations: ReadonlyArray<Pick<Variation, 'id' | 'name' | 'value' | 'weight'>>;
  /** The control's variation id; null when the flag has no variations (or is gone). */
  controlId: string | null;
}

/**
 * The control of an experiment: the flag's off variation in the environment read (the value served
 * when it is switched off: `offValue`, else `false` for booleans and `defaultValue` otherwise), when a
 * variation holds that value; otherwise the flag's first variation. A rollout plan rolls back to it.
 */
export function armsOf(row: FlagRow): FlagArms {
  const variations = row.flag.variations;
  const off: JsonValue = row.env.offValue ?? (row.flag.type === 'boolean' ? false : row.flag.defaultValue);
  const control = variations.find((v) => isDeepStrictEqual(v.value, off)) ?? variations[0];
  return { variations, controlId: control?.id ?? null };
}

/**
 * The variation a ledger row's `variation` names: the gateway records a variation's id; a name or the
 * variation's index (LaunchDarkly's form) is read as well, so a report never loses rows to the form.
 */
export function variationNamed(arms: FlagArms, recorded: string): FlagArms['variations'][number] | undefined {
  return arms.variations.find((v) => v.id === recorded) ?? arms.variations.find((v) => v.name === recorded) ?? (/^\d{1,4}$/.test(recorded) ? arms.variations[Number(recorded)] : undefined);
}

/**
 * The treatment a rollout plan moves traffic to: the plan's `treatment` (a variation id or name),
 * else the first variation that is not the control.
 */
export function treatmentOf(arms: FlagArms, named?: string): FlagArms['variations'][number] | undefined {
  if (named !== undefined) {
    const v = variationNamed(arms, named);
    return v && v.id !== arms.controlId ? v : undefined;
  }
  return arms.variations.find((v) => v.id !== arms.controlId);
}

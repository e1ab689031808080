/**
 * What usage retention removes, from the operator's ceiling and each plan's own months (months kept
 * besides the running UTC month). Partitions are shared by every tenant, so a month's partition can
 * only go once no plan keeps it: at the longest plan's retention (capped by the operator's). A plan
 * keeping less has its tenants' older rows deleted in batches until the partition goes.
 */
export interface RetentionPolicy {
  /** Partitions wholly older than this many months are dropped. */
  partitionMonths: number;
  /** Plans keeping fewer months than the partitions: their rows older than `months` are deleted. */
  shorterPlans: Array<{ plan: string; months: number }>;
}

/** `operatorMonths` 0: retention is off, nothing is removed (null). */
export function retentionPolicy(operatorMonths: number, byPlan: Readonly<Record<string, number>>): RetentionPolicy | null {
  if (operatorMonths <= 0) return null;
  const plans = Object.entries(byPlan).map(([plan, months]) => ({ plan, months: Math.min(operatorMonths, months) }));
  const partitionMonths = plans.length === 0 ? operatorMonths : Math.max(...plans.map((p) => p.months));
  return { partitionMonths, shorterPlans: plans.filter((p) => p.months < partitionMonths).sort((a, b) => a.plan.localeCompare(b.plan)) };
}

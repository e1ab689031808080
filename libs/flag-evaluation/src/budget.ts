/**
 * The per-evaluation budget: defence in depth under the write-time bounds (regex length, attribute
 * length, prerequisite depth and count), so that no single evaluation holds the event loop for more
 * than a few milliseconds whatever the stored data (a flag inserted straight into the database, say).
 *
 * A step is roughly 100 ns of work on a 2-core VM: a rule, a clause, an attribute array element, a
 * prerequisite; a rollout (a SHA-1) counts 10, and a regex match one per 4 characters it reads (re2js
 * takes up to about 0.4 µs a character on the worst patterns we found). An ordinary flag takes tens to
 * hundreds of steps; a flag of 200 rules about a thousand. Counting is one subtraction and a compare.
 */
export const MAX_EVALUATION_STEPS = 25_000;
export const ROLLOUT_STEPS = 10;

/** Thrown (one shared object, no stack) when an evaluation runs out; caught where it started. */
export const OVER_BUDGET: { readonly overBudget: true } = Object.freeze({ overBudget: true });

let remaining = MAX_EVALUATION_STEPS;

/** Evaluation is synchronous, so one budget serves the evaluation in progress. */
export function resetBudget(): void {
  remaining = MAX_EVALUATION_STEPS;
}

export function spend(steps: number): void {
  if ((remaining -= steps) < 0) throw OVER_BUDGET;
}

/** Steps left, for tests. @internal */
export function stepsLeft(): number {
  return remaining;
}

type OverBudgetListener = (flagKey: string) => void;
const listeners = new Set<OverBudgetListener>();

/**
 * Calls `listener` with the flag's key whenever an evaluation runs out of budget (it then answers
 * ERROR/MALFORMED_FLAG): apps log and count it. Returns the function that removes it (tests boot
 * several apps in one process).
 */
export function onEvaluationOverBudget(listener: OverBudgetListener): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

export function reportOverBudget(flagKey: string): void {
  for (const listener of listeners) {
    try {
      listener(flagKey);
    } catch {
      // A failing listener must not turn an answer into an exception.
    }
  }
}

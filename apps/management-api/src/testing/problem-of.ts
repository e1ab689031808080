import { ProblemException } from '@flagship/problem-details';

/** The ProblemException `p` rejects with (a service's refusal); anything else, or resolving, fails the test. */
export async function problemOf(p: Promise<unknown>): Promise<ProblemException> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ProblemException) return err;
    throw err;
  }
  throw new Error('resolved');
}

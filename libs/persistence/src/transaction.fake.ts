import { runWithAfterCommit, type TransactionRunner, type Tx } from './transaction';

/** The transaction handle in-memory fakes of repositories are handed, which they never use. */
export const FAKE_TX = {} as Tx;

/** Runs work in a transaction: on Postgres for a real repository, at once with FAKE_TX for its in-memory twin. */
export type InTransaction = <T>(work: (m: Tx) => Promise<T>) => Promise<T>;
export const inFakeTransaction: InTransaction = (work) => work(FAKE_TX);

/**
 * TransactionRunner for services over in-memory fakes: `work` runs at once with FAKE_TX (no rollback:
 * a fake holds no partial write), then what it registered with afterCommit.
 */
export const inlineTransactions: Pick<TransactionRunner, 'run'> = { run: (work) => runWithAfterCommit(inFakeTransaction, work) };

/**
 * TransactionRunner for an in-memory fake whose whole state is one value: a throwing transaction
 * puts back the copy taken when it began, as Postgres undoes it, so all-or-nothing writes are proven
 * over fakes too. `afterCommit` work runs only once the transaction has not thrown.
 */
export function snapshotTransactions<S>(state: { get: () => S; set: (saved: S) => void }, copy: (s: S) => S): Pick<TransactionRunner, 'run'> {
  return {
    run: (work) =>
      runWithAfterCommit(async (w) => {
        const saved = copy(state.get());
        try {
          return await w(FAKE_TX);
        } catch (err) {
          state.set(saved);
          throw err;
        }
      }, work),
  };
}

import { runWithAfterCommit, type TransactionRunner, type Tx } from '@flagship/persistence';

/** The transaction handle unit tests hand to in-memory fakes, which never use it. */
export const FAKE_TX = {} as Tx;

/**
 * TransactionRunner for services over in-memory fakes: `work` runs at once with FAKE_TX (no rollback: a
 * fake holds no partial write), then what it registered with afterCommit.
 */
export const inlineTransactions: Pick<TransactionRunner, 'run'> = { run: (work) => runWithAfterCommit((w) => w(FAKE_TX), work) };

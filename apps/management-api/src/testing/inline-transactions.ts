// The one definition is beside TransactionRunner (libs/persistence); management-api's specs import it from here.
export { FAKE_TX, inlineTransactions, snapshotTransactions } from '@flagship/persistence/testing';

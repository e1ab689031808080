// A customer's TypeScript (CommonJS): the `require` condition's declarations.
import { FlagshipClient, type FlagType } from '@flagship/sdk';
import { FlagshipInProcessProvider } from '@flagship/openfeature-provider';

const kind: FlagType = 'boolean';
export const created = new FlagshipClient({ baseUrl: 'http://127.0.0.1:3000', auth: { idToken: 'token' } }).flags.create({ key: 'k', name: 'K', type: kind, defaultValue: false });
export const provider: { metadata: { name: string } } = new FlagshipInProcessProvider({ baseUrl: 'http://127.0.0.1:3000', auth: { idToken: 'token' } });

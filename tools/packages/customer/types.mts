// A customer's TypeScript (ES module): the bundled declarations type the calls, and refuse a wrong one.
import { type Flag, FlagNotFoundError, FlagshipClient } from '@flagship/sdk';
import { FlagshipInProcessProvider, type InProcessProviderOptions } from '@flagship/openfeature-provider';
import { OpenFeature } from '@openfeature/server-sdk';

const options: InProcessProviderOptions = { baseUrl: 'http://127.0.0.1:3000', environment: 'production', auth: { clientId: 'id', clientSecret: 'secret', scopes: ['flags:read'] } };
export const ready: Promise<void> = OpenFeature.setProviderAndWait(new FlagshipInProcessProvider(options));
const flagship = new FlagshipClient({ baseUrl: 'http://127.0.0.1:3000', auth: { idToken: () => Promise.resolve('token') } });
export const read: Promise<Flag> = flagship.flags.get('new-checkout').then(({ flag }) => flag);
export const isMissing = (err: unknown): boolean => err instanceof FlagNotFoundError && err.flagKey !== undefined;
// @ts-expect-error: not a scope
export const wrong = new FlagshipClient({ baseUrl: 'http://127.0.0.1:3000', auth: { clientId: 'a', clientSecret: 'b', scopes: ['flags:reed'] } });

// The entry point of the published `@flagship/openfeature-provider` package: the in-process provider
// with the evaluator and the client code it streams with bundled in; `@openfeature/server-sdk` is the
// application's own (a peer dependency).
export { FlagshipInProcessProvider, type InProcessProviderOptions } from './in-process-provider';
export type { AuthOptions, ClientCredentialsAuth, IdTokenAuth } from './credentials';
export type { FlagshipClientOptions } from './flagship.client';
export type { RetryEvent } from './http-transport';
export { SDK_VERSION } from './flagship.client';

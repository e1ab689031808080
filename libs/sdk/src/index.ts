// The monorepo's view of libs/sdk: both published packages' surfaces in one import (`@flagship/sdk`).
export * from './sdk.package';
export { FlagshipInProcessProvider, type InProcessProviderOptions } from './in-process-provider';

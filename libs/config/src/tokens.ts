/** Injection token of an app's validated configuration object. */
export const APP_CONFIG = Symbol('APP_CONFIG');

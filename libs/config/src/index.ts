export * from './load-config';
export * from './common-env';
export * from './secret-store';
export { bool, num, str, port, url, host, email, makeValidator } from 'envalid';
export * from './tokens';

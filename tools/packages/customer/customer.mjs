// A customer's ES module script: import of both packages, run with plain node.
import { FlagNotFoundError, FlagshipClient } from '@flagship/sdk';
import { FlagshipInProcessProvider } from '@flagship/openfeature-provider';
import { OpenFeature } from '@openfeature/server-sdk';
import customerFlow from './flow.cjs';

const resolved = ['@flagship/sdk', '@flagship/openfeature-provider'].map((name) => import.meta.resolve(name));
try {
  const result = await customerFlow({ FlagshipClient, FlagNotFoundError, FlagshipInProcessProvider, OpenFeature }, process.env);
  process.stdout.write(JSON.stringify({ resolved, ...result }));
} catch (err) {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
}

// A customer's CommonJS script: require() of both packages, run with plain node.
const { FlagNotFoundError, FlagshipClient } = require('@flagship/sdk');
const { FlagshipInProcessProvider } = require('@flagship/openfeature-provider');
const { OpenFeature } = require('@openfeature/server-sdk');
const customerFlow = require('./flow.cjs');

const resolved = ['@flagship/sdk', '@flagship/openfeature-provider'].map((name) => require.resolve(name));
customerFlow({ FlagshipClient, FlagNotFoundError, FlagshipInProcessProvider, OpenFeature }, process.env).then(
  (result) => process.stdout.write(JSON.stringify({ resolved, ...result })),
  (err) => {
    process.stderr.write(`${err.stack ?? err}\n`);
    process.exit(1);
  },
);

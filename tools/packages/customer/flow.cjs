// What a customer's backend does with the two packages, handed them by a CommonJS entry (customer.cjs)
// or an ES module one (customer.mjs), so each module system loads the packages its own way.
module.exports = async function customerFlow({ FlagshipClient, FlagNotFoundError, FlagshipInProcessProvider, OpenFeature }, env) {
  const baseUrl = env.FLAGSHIP_URL;
  const credentials = { clientId: env.FLAGSHIP_CLIENT_ID, clientSecret: env.FLAGSHIP_CLIENT_SECRET };
  const key = env.FLAG_KEY;

  // The management API through the client: sign in with the OAuth client, create, read, update.
  const flagship = new FlagshipClient({ baseUrl, auth: { ...credentials, scopes: ['flags:read', 'flags:write'] } });
  const created = await flagship.flags.create({ key, name: 'New checkout', type: 'boolean', defaultValue: false, enabled: true });
  const { flag, etag } = await flagship.flags.get(key);
  const on = flag.variations.find((v) => v.value === true);
  const nordics = { id: 'nordics', clauses: [{ attribute: 'country', op: 'in', values: ['NO', 'SE'] }], variationId: on.id };
  const updated = await flagship.flags.update(key, { rules: [nordics] }, { ifMatch: etag });
  const missing = await flagship.flags.get(`${key}-missing`).then(
    () => 'found',
    (err) => (err instanceof FlagNotFoundError ? `${err.name} ${err.flagKey}` : String(err)),
  );

  // In-process evaluation through OpenFeature, the flags streamed from the same API.
  await OpenFeature.setProviderAndWait(new FlagshipInProcessProvider({ baseUrl, auth: { ...credentials, scopes: ['flags:read'] } }));
  const client = OpenFeature.getClient();
  const result = {
    created: { key: created.key, enabled: created.enabled, values: created.variations.map((v) => v.value) },
    read: { key: flag.key, etag: typeof etag },
    updated: updated.flag.rules.map((r) => r.id),
    missing,
    norway: await client.getBooleanDetails(key, false, { targetingKey: 'user-42', country: 'NO' }),
    us: await client.getBooleanDetails(key, true, { targetingKey: 'user-43', country: 'US' }),
    unknown: await client.getBooleanDetails(`${key}-missing`, true, { targetingKey: 'user-42' }),
  };
  await OpenFeature.close();
  return result;
};

import { checkFlagDefinition, clientSideAvailabilityOf, compileFlag, type FlagDefinition, LiveFlagSet, SERVER_ONLY } from './index';

const flag = (extra: Partial<FlagDefinition> = {}): FlagDefinition => ({
  key: 'banner',
  type: 'boolean',
  defaultValue: false,
  enabled: true,
  variations: [
    { id: 'on', name: 'on', value: true, weight: 0 },
    { id: 'off', name: 'off', value: false, weight: 0 },
  ],
  targets: [],
  rules: [],
  prerequisites: [],
  ...extra,
});

describe('clientSideAvailability', () => {
  it('a flag without it is server-only, as LaunchDarkly treats absence and false alike', () => {
    expect(compileFlag(flag()).clientSide).toBe(SERVER_ONLY);
    expect(compileFlag(flag({ clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false } })).clientSide).toBe(SERVER_ONLY);
  });

  it('the compiled flag carries what the definition says, from a definition or its JSON text alike', () => {
    const both = { usingEnvironmentId: true, usingMobileKey: true };
    expect(compileFlag(flag({ clientSideAvailability: both })).clientSide).toEqual(both);
    const snapshot = LiveFlagSet.ofTexts([{ key: 'banner', text: JSON.stringify(flag({ clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: false } })) }]);
    expect(snapshot.get('banner')!.clientSide).toEqual({ usingEnvironmentId: true, usingMobileKey: false });
  });

  it('stored data that is not two booleans reads as server-only, never as available', () => {
    for (const bad of [null, 'yes', [], { usingEnvironmentId: 'true' }, { usingEnvironmentId: 1, usingMobileKey: 1 }]) {
      expect(clientSideAvailabilityOf(bad)).toBe(SERVER_ONLY);
    }
    expect(clientSideAvailabilityOf({ usingMobileKey: true })).toEqual({ usingEnvironmentId: false, usingMobileKey: true });
  });

  it('the validator refuses anything but {usingEnvironmentId: boolean, usingMobileKey: boolean}', () => {
    expect(checkFlagDefinition(flag({ clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: false } })).errors).toEqual([]);
    const errors = (value: unknown) => checkFlagDefinition({ ...flag(), clientSideAvailability: value } as FlagDefinition).errors;
    expect(errors('yes')).toEqual([{ path: 'clientSideAvailability', message: 'must be an object {usingEnvironmentId, usingMobileKey}' }]);
    expect(errors({ usingEnvironmentId: true })).toEqual([{ path: 'clientSideAvailability.usingMobileKey', message: 'must be a boolean' }]);
    expect(errors({ usingEnvironmentId: true, usingMobileKey: false, everywhere: true })).toEqual([{ path: 'clientSideAvailability.everywhere', message: 'is not an allowed field' }]);
  });
});

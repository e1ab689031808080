import { CHANNELS } from './channels';

describe('the flag-changed channel', () => {
  it('keeps a segment change’s segmentKey (stores re-read the environment: there is no flagKey)', () => {
    expect(CHANNELS.flagChanged.check({ tenantId: 't', environment: 'production', segmentKey: 'beta', version: 2 })).toEqual({ tenantId: 't', environment: 'production', segmentKey: 'beta', version: 2 });
    expect(CHANNELS.flagChanged.check({ tenantId: 't', environment: 'production', flagKey: 'f', version: 1 })).toEqual({ tenantId: 't', environment: 'production', flagKey: 'f', version: 1 });
  });

  it('refuses a segmentKey that is not text, as it refuses such a flagKey', () => {
    expect(CHANNELS.flagChanged.check({ tenantId: 't', segmentKey: 7 })).toBeUndefined();
    expect(CHANNELS.flagChanged.check({ tenantId: 't', segmentKey: '' })).toBeUndefined();
  });
});

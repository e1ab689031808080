import { CircuitBreaker } from './circuit-breaker';

describe('CircuitBreaker', () => {
  let now = 0;
  const breaker = (): CircuitBreaker => new CircuitBreaker(3, 1000, () => now);
  beforeEach(() => (now = 0));

  it('opens after the threshold of consecutive failures, not before', () => {
    const b = breaker();
    b.onFailure();
    b.onFailure();
    expect(b.tryPass()).toBe(true);
    b.onSuccess();
    b.onFailure();
    b.onFailure();
    expect(b.state).toBe('closed');
    b.onFailure();
    expect(b.state).toBe('open');
    expect(b.tryPass()).toBe(false);
  });

  it('lets one probe through after the cool-down; success closes it', () => {
    const b = breaker();
    for (let i = 0; i < 3; i++) b.onFailure();
    now = 999;
    expect(b.tryPass()).toBe(false);
    now = 1000;
    expect(b.tryPass()).toBe(true);
    expect(b.state).toBe('half-open');
    expect(b.tryPass()).toBe(false);
    b.onSuccess();
    expect(b.state).toBe('closed');
    expect(b.tryPass()).toBe(true);
  });

  it('a failed probe opens it again for a whole cool-down', () => {
    const b = breaker();
    for (let i = 0; i < 3; i++) b.onFailure();
    now = 1500;
    expect(b.tryPass()).toBe(true);
    b.onFailure();
    expect(b.state).toBe('open');
    now = 2400;
    expect(b.tryPass()).toBe(false);
    now = 2500;
    expect(b.tryPass()).toBe(true);
  });

  it('a released probe frees the slot for another', () => {
    const b = breaker();
    for (let i = 0; i < 3; i++) b.onFailure();
    now = 1000;
    expect(b.tryPass()).toBe(true);
    expect(b.tryPass()).toBe(false);
    b.release();
    expect(b.tryPass()).toBe(true);
  });
});

import { BufferedMetrics } from './buffered-metrics';

describe('BufferedMetrics', () => {
  const recorder = () => {
    const seen: Array<[string, string, number, number]> = [];
    return { seen, sink: { observe: (m: string, r: string, s: number, sec: number) => void seen.push([m, r, s, sec]) } };
  };

  it('records nothing until flushed, then every observation in order, exactly once', () => {
    const { seen, sink } = recorder();
    const metrics = new BufferedMetrics(sink, 60_000);
    metrics.observe('POST', '/a', 200, 0.001);
    metrics.observe('GET', '/b', 404, 0.25);
    expect(seen).toEqual([]);
    metrics.flush();
    expect(seen).toEqual([
      ['POST', '/a', 200, 0.001],
      ['GET', '/b', 404, 0.25],
    ]);
    metrics.flush();
    expect(seen).toHaveLength(2);
    metrics.close();
  });

  it('flushes by itself when its arrays are full, and on close', () => {
    const { seen, sink } = recorder();
    const metrics = new BufferedMetrics(sink, 60_000, 3);
    for (let i = 0; i < 7; i++) metrics.observe('POST', '/a', 200 + i, i);
    expect(seen.map((o) => o[2])).toEqual([200, 201, 202, 203, 204, 205]);
    metrics.close();
    expect(seen.map((o) => o[2])).toEqual([200, 201, 202, 203, 204, 205, 206]);
  });

  it('flushes on its timer', async () => {
    const { seen, sink } = recorder();
    const metrics = new BufferedMetrics(sink, 10);
    metrics.observe('POST', '/a', 200, 0.5);
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual([['POST', '/a', 200, 0.5]]);
    metrics.close();
  });
});

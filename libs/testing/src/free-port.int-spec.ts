import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePort } from './processes';

describe('freePort', () => {
  const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

  it('hands out ports below the ephemeral range, never the same one twice in a row, skipping one in use', async () => {
    const first = await freePort();
    // Another server takes the next port of the slice: freePort passes it by.
    const squatter = createServer();
    squatter.listen(first + 1, '127.0.0.1');
    await once(squatter, 'listening');
    try {
      const ports = [first];
      for (let i = 0; i < 20; i++) ports.push(await freePort());
      expect(new Set(ports).size).toBe(ports.length);
      expect(ports).not.toContain(first + 1);
      for (const port of ports) {
        expect(port).toBeGreaterThanOrEqual(10000);
        expect(port).toBeLessThan(ephemeralLow);
      }
      // Each is one a server can listen on.
      const server = createServer();
      server.listen(ports[20], '127.0.0.1');
      await once(server, 'listening');
      server.close();
    } finally {
      squatter.close();
    }
  });
});

// Fails in one clear line when Postgres or Redis does not answer where the apps will look for them.
import { Socket } from 'node:net';

const targets = [
  ['Postgres', process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/flagship', 5432,
    "start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"],
  ['Redis', process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 6379, 'start it with: redis-server --daemonize yes --port 6379 --save ""'],
];

function reachable(host, port) {
  return new Promise((resolve) => {
    const s = new Socket();
    s.setTimeout(1500);
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
    s.connect(port, host, () => {
      s.destroy();
      resolve(true);
    });
  });
}

let ok = true;
for (const [name, url, defaultPort, hint] of targets) {
  const u = new URL(url);
  const host = u.hostname || '127.0.0.1';
  const port = Number(u.port || defaultPort);
  if (!(await reachable(host, port))) {
    console.error(`${name} is not answering at ${host}:${port}; ${hint}`);
    ok = false;
  }
}
process.exit(ok ? 0 : 1);

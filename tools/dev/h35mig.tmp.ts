import { runMigrations } from '@flagship/persistence';
runMigrations(process.argv[2]!).then((a) => { console.log(a.slice(-3)); }, (e) => { console.error(e); process.exit(1); });

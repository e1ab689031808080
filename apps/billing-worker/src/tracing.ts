// Imported first by main.ts: the instrumentations patch pg, ioredis, http and undici as they load.
import { startTracing } from '@flagship/tracing';

startTracing('billing-worker');

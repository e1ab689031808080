/**
 * What each app asks of its environment, read from the app's own code rather than written down a
 * second time: the envalid specs and the load*Config function of `apps/<app>/src/env.schema.ts`,
 * and the GET routes its Nest module tree declares. When an app gains a variable, the deployment
 * checks learn it from here.
 */
import 'reflect-metadata';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');

/** An envalid spec as the validators build it. */
interface EnvSpec {
  _parse: (input: string) => unknown;
  default?: unknown;
  devDefault?: unknown;
}

export interface AppContract {
  app: string;
  specs: Record<string, EnvSpec>;
  /** The app's own start-up validation (throws a ConfigError naming what is wrong). */
  load: (env: NodeJS.ProcessEnv) => Record<string, unknown>;
  /** The variable holding the listening port (PORT, or OREP_PORT for orep-server). */
  portVariable: string;
  /**
   * Whether the app's code (or a lib's) names this variable as a string literal: secrets read
   * through SecretStore.get('NAME') rather than the env schema.
   */
  mentions: (name: string) => boolean;
}

const isSpec = (v: unknown): v is EnvSpec => typeof v === 'object' && v !== null && typeof (v as EnvSpec)._parse === 'function';

/** Every app with an env.schema.ts. */
export function appNames(): string[] {
  return readdirSync(join(ROOT, 'apps'))
    .filter((a) => existsSync(join(ROOT, 'apps', a, 'src', 'env.schema.ts')))
    .sort();
}

export function appContract(app: string): AppContract {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(join(ROOT, 'apps', app, 'src', 'env.schema')) as Record<string, unknown>;
  const specs: Record<string, EnvSpec> = {};
  for (const value of Object.values(mod)) {
    if (typeof value === 'object' && value !== null && Object.values(value).length > 0 && Object.values(value).every(isSpec)) {
      Object.assign(specs, value);
    }
  }
  const loaders = Object.entries(mod).filter(([name, v]) => /^load\w*Config$/.test(name) && typeof v === 'function');
  if (loaders.length !== 1) throw new Error(`apps/${app}/src/env.schema.ts should export one load*Config function, found ${loaders.length}`);
  if (Object.keys(specs).length === 0) throw new Error(`apps/${app}/src/env.schema.ts exports no envalid specs`);
  const portVariable = specs['OREP_PORT'] ? 'OREP_PORT' : 'PORT';
  if (!specs[portVariable]) throw new Error(`apps/${app}: no PORT in the env schema`);
  const sources = [join(ROOT, 'apps', app, 'src'), ...readdirSync(join(ROOT, 'libs')).map((l) => join(ROOT, 'libs', l, 'src'))];
  let text: string | undefined;
  const mentions = (name: string) => {
    text ??= sources.flatMap((d) => sourceFiles(d)).map((f) => readFileSync(f, 'utf8')).join('\n');
    return new RegExp(`['"\`]${name}['"\`]`).test(text);
  };
  return { app, specs, load: loaders[0][1] as AppContract['load'], portVariable, mentions };
}

/** The non-test TypeScript files under a directory. */
function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(e.name) && !/\.(spec|int-spec|e2e-spec)\.ts$/.test(e.name) ? [path] : [];
  });
}

/** envalid's rule: no value and no default is missing; devDefault counts only when NODE_ENV is set and not production. */
export function requiredVariables(contract: AppContract, nodeEnv: string | undefined): string[] {
  return Object.entries(contract.specs)
    .filter(([, spec]) => !('default' in spec) && !(nodeEnv !== undefined && nodeEnv !== 'production' && Object.hasOwn(spec, 'devDefault')))
    .map(([name]) => name);
}

export const defaultOf = (contract: AppContract, name: string): unknown => contract.specs[name]?.default;

type Ctor = abstract new (...args: never[]) => unknown;
interface DynamicModuleLike {
  module: Ctor;
  imports?: unknown[];
  controllers?: Ctor[];
}

/**
 * The GET routes the app's Nest module tree declares (controller path + method path), found by
 * walking AppModule.forConfig(config)'s imports as Nest does. Routes served in front of Nest (the
 * orep fast path) are not in it; the e2e check requests the probes of each started app.
 */
export function nestGetRoutes(app: string, config: Record<string, unknown>): Set<string> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(join(ROOT, 'apps', app, 'src', 'app.module')) as { AppModule: { forConfig: (c: unknown) => DynamicModuleLike } };
  const routes = new Set<string>();
  const seen = new Set<unknown>();
  const join2 = (a: string, b: string) => `/${[a, b].map((p) => p.replace(/^\/+|\/+$/g, '')).filter(Boolean).join('/')}`;
  const controller = (ctrl: Ctor) => {
    const bases = [Reflect.getMetadata('path', ctrl) ?? ''].flat() as string[];
    const proto = (ctrl as unknown as { prototype: Record<string, unknown> }).prototype;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const handler = proto[name];
      if (typeof handler !== 'function' || name === 'constructor') continue;
      const paths = Reflect.getMetadata('path', handler) as string | string[] | undefined;
      // RequestMethod.GET is 0; ALL (7) answers GET too.
      const method = Reflect.getMetadata('method', handler) as number | undefined;
      if (paths === undefined || (method !== 0 && method !== 7)) continue;
      for (const base of bases) for (const p of [paths].flat()) routes.add(join2(base, p));
    }
  };
  const visit = (m: unknown) => {
    if (!m || seen.has(m) || m instanceof Promise) return;
    seen.add(m);
    if (typeof m === 'object' && 'forwardRef' in (m as object)) return visit((m as { forwardRef: () => unknown }).forwardRef());
    const dyn = typeof m === 'function' ? undefined : (m as DynamicModuleLike);
    const cls = typeof m === 'function' ? (m as Ctor) : dyn!.module;
    for (const c of [...((Reflect.getMetadata('controllers', cls) as Ctor[]) ?? []), ...(dyn?.controllers ?? [])]) controller(c);
    for (const i of [...((Reflect.getMetadata('imports', cls) as unknown[]) ?? []), ...(dyn?.imports ?? [])]) visit(i);
  };
  // The Postgres CA bundle is a Secret mounted in the pod, not a file here, and no route depends on
  // it: left out, so building the modules does not stop at reading it.
  visit(mod.AppModule.forConfig({ ...config, DATABASE_SSL_MODE: '', DATABASE_SSL_CA_FILE: '' }));
  return routes;
}

import { type DynamicModule, type ForwardReference, RequestMethod, type Type } from '@nestjs/common';
import { METHOD_METADATA, MODULE_METADATA, PATH_METADATA } from '@nestjs/common/constants';

/** A route a Nest controller serves: its method, its full path (`/api/flags/:flagKey`), and where it is declared. */
export interface NestRoute {
  method: string;
  path: string;
  controller: Type;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  handler: Function;
}

type ModuleRef = Type | DynamicModule | ForwardReference;

/**
 * Every route of the controllers in a module tree, read from Nest's metadata without creating the
 * app (no provider is built, nothing connects): what a spec needs to hold each served endpoint to
 * a table. Asynchronous imports are refused: they would hide controllers from the walk.
 */
export function routesOf(root: ModuleRef): NestRoute[] {
  const seen = new Set<unknown>();
  const routes: NestRoute[] = [];
  const visit = (ref: ModuleRef | Promise<DynamicModule> | undefined): void => {
    if (!ref) return;
    if (ref instanceof Promise) throw new Error('routesOf cannot read an asynchronous import');
    const resolved = 'forwardRef' in ref ? (ref.forwardRef() as ModuleRef) : ref;
    if (seen.has(resolved)) return;
    seen.add(resolved);
    const dynamic = typeof resolved === 'function' ? undefined : (resolved as DynamicModule);
    const cls = (dynamic ? dynamic.module : resolved) as Type;
    const imports = [...((Reflect.getMetadata(MODULE_METADATA.IMPORTS, cls) as ModuleRef[] | undefined) ?? []), ...((dynamic?.imports ?? []) as ModuleRef[])];
    const controllers = [...((Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, cls) as Type[] | undefined) ?? []), ...(dynamic?.controllers ?? [])];
    for (const c of controllers) {
      if (seen.has(c)) continue;
      seen.add(c);
      routes.push(...routesOfController(c));
    }
    for (const i of imports) visit(i);
  };
  visit(root);
  return routes;
}

function routesOfController(controller: Type): NestRoute[] {
  const prefixes = paths(Reflect.getMetadata(PATH_METADATA, controller));
  const proto = controller.prototype as Record<string, unknown>;
  return Object.getOwnPropertyNames(proto).flatMap((name) => {
    const handler = proto[name];
    if (name === 'constructor' || typeof handler !== 'function') return [];
    const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
    if (method === undefined) return [];
    return prefixes.flatMap((prefix) =>
      paths(Reflect.getMetadata(PATH_METADATA, handler)).map((p) => ({ method: RequestMethod[method], path: join(prefix, p), controller, handler })),
    );
  });
}

const paths = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : [typeof v === 'string' ? v : '']);
const join = (...parts: string[]): string => `/${parts.flatMap((p) => p.split('/')).filter((p) => p !== '').join('/')}`;

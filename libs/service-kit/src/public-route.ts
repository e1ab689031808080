import { SetMetadata } from '@nestjs/common';
import { DECORATORS } from '@nestjs/swagger/dist/constants';

/** Metadata key of routes that need no authentication; every app's auth guard honours it. */
export const PUBLIC_ROUTE = 'flagship:public-route';

/**
 * No bearer token needed (health, sign-in, token endpoint, discovery documents...). The OpenAPI
 * document says so too, with an explicit empty `security` list, so a generated client sends no token
 * and a public route can never be left undocumented.
 */
export function Public(): MethodDecorator & ClassDecorator {
  const mark = SetMetadata(PUBLIC_ROUTE, true);
  return (target: object, key?: string | symbol, descriptor?: PropertyDescriptor): void => {
    if (descriptor && key !== undefined) {
      mark(target, key, descriptor);
      // @nestjs/swagger drops an empty method-level ApiSecurity list; an operation's own `security` wins.
      const handler = descriptor.value as object;
      Reflect.defineMetadata(DECORATORS.API_OPERATION, { ...Reflect.getMetadata(DECORATORS.API_OPERATION, handler), security: [] }, handler);
      return;
    }
    mark(target as abstract new (...args: never[]) => unknown);
    Reflect.defineMetadata(DECORATORS.API_SECURITY, [], target);
  };
}

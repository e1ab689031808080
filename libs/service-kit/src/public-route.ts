import { SetMetadata } from '@nestjs/common';

/** Metadata key of routes that need no authentication; every app's auth guard honours it. */
export const PUBLIC_ROUTE = 'flagship:public-route';

/** No bearer token needed (health, sign-in, token endpoint, discovery documents...). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_ROUTE, true);

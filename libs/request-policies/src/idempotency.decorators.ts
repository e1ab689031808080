import { SetMetadata } from '@nestjs/common';

export const IDEMPOTENCY_POLICY = 'request-policies:idempotency';

export type IdempotencyPolicy = 'off' | 'secret-response';

/**
 * The route ignores Idempotency-Key: authentication routes (`/oauth/token`, sign-in, the dev
 * identity provider), whose answer is a credential. A stored answer there would go to whoever sends
 * the key next, before their own credentials were checked.
 */
export const NoIdempotency = (): MethodDecorator & ClassDecorator => SetMetadata(IDEMPOTENCY_POLICY, 'off' satisfies IdempotencyPolicy);

/**
 * The route's success answer carries a secret (a new client secret): it is never stored. The key is
 * still claimed and its outcome recorded without the body, so a retry does not act twice; the retry
 * gets 409 `idempotent-response-not-replayable` (with the first answer's Location, when it had one).
 */
export const SecretResponse = (): MethodDecorator & ClassDecorator => SetMetadata(IDEMPOTENCY_POLICY, 'secret-response' satisfies IdempotencyPolicy);

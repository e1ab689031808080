import { Button } from 'react-aria-components';
import { isApiError } from '../api';

export function Loading({ what }: { what: string }) {
  return (
    <p className="state" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: React.ReactNode }) {
  return <div className="state empty">{children}</div>;
}

/**
 * Any failed request: the problem's title and detail, the request id to quote to support, and what
 * the user can do about it (403: the role needed; 429: when to retry). 401 never reaches here: the
 * query client sends the user back to sign-in.
 */
export function ErrorState({ error, onRetry, hint }: { error: unknown; onRetry?: () => void; hint?: string }) {
  if (!isApiError(error)) {
    return (
      <div role="alert" className="state error">
        <h2>Something went wrong</h2>
        <p>{error instanceof Error ? error.message : String(error)}</p>
      </div>
    );
  }
  return (
    <div role="alert" className="state error">
      <h2>{error.title}</h2>
      {error.detail && <p>{error.detail}</p>}
      {hint && <p>{hint}</p>}
      {error.status === 403 && <p>Your role in this tenant does not allow this. Ask an owner or admin of the tenant for the role it needs.</p>}
      {error.status === 429 && <p>Too many requests. Try again in {error.retryAfterSeconds ?? 60} seconds.</p>}
      {error.requestId && (
        <p className="request-id">
          Request id (quote it to support): <code>{error.requestId}</code>
        </p>
      )}
      {onRetry && <Button onPress={onRetry}>Try again</Button>}
    </div>
  );
}

import { Fragment, useState, type ReactNode } from 'react';
import { Button } from 'react-aria-components';

/**
 * A secret as the API returns it once (an OAuth client's, a webhook's signing secret): shown with a
 * copy button and a warning, and kept only in the caller's state, so dismissing it forgets it for good.
 */
export function SecretOnce({
  title,
  warning,
  fields,
  secretLabel,
  secret,
  secretTestId = 'secret',
  onDone,
}: {
  title: string;
  /** Why it cannot be shown again, and where to keep it. */
  warning: ReactNode;
  /** What else identifies it (a client id), shown above the secret. */
  fields?: ReadonlyArray<{ label: string; value: string; testId: string }>;
  secretLabel: string;
  secret: string;
  secretTestId?: string;
  onDone: () => void;
}) {
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  return (
    <div className="panel secret" role="region" aria-labelledby="secret-title">
      <h2 id="secret-title">{title}</h2>
      <p className="notice" role="note">
        {warning}
      </p>
      <dl className="settings">
        {fields?.map((f) => (
          <Fragment key={f.testId}>
            <dt>{f.label}</dt>
            <dd>
              <code data-testid={f.testId}>{f.value}</code>
            </dd>
          </Fragment>
        ))}
        <dt>{secretLabel}</dt>
        <dd>
          <code data-testid={secretTestId}>{secret}</code>
        </dd>
      </dl>
      <div className="actions">
        <Button
          className="primary"
          onPress={() => {
            navigator.clipboard.writeText(secret).then(
              () => setCopied('yes'),
              () => setCopied('failed'),
            );
          }}
        >
          Copy secret
        </Button>
        <Button onPress={onDone}>I have stored the secret</Button>
      </div>
      <p role="status" className="muted">
        {copied === 'yes' ? 'Copied to the clipboard.' : copied === 'failed' ? 'The browser refused the clipboard: select the secret and copy it.' : ''}
      </p>
    </div>
  );
}

import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';

/**
 * A local AWS Secrets Manager answering `GetSecretValue` over its JSON protocol
 * (`POST /`, `X-Amz-Target: secretsmanager.GetSecretValue`, `application/x-amz-json-1.1`), for the
 * real `@aws-sdk/client-secrets-manager` pointed at it through `AWS_ENDPOINT_URL`. Requests must
 * carry a SigV4 `Authorization` header (the SDK signs; the signature itself is not checked).
 */
export class FakeSecretsManager {
  private readonly secrets = new Map<string, { value: string; versionId: string; created: number }>();
  /** Every GetSecretValue call, by secret id. */
  readonly reads: string[] = [];
  failing = false;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeSecretsManager> {
    const holder: { self?: FakeSecretsManager } = {};
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const [status, body] = holder.self ? holder.self.answer(req.headers, Buffer.concat(chunks).toString('utf8')) : [500, {}];
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': randomUUID() });
        res.end(JSON.stringify(body));
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    holder.self = new FakeSecretsManager(server, `http://127.0.0.1:${port}`);
    return holder.self;
  }

  /** Creates or rotates a secret (a new version becomes AWSCURRENT). */
  put(secretId: string, value: string | Record<string, string>): void {
    this.secrets.set(secretId, { value: typeof value === 'string' ? value : JSON.stringify(value), versionId: randomUUID(), created: Date.now() / 1000 });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private answer(headers: Record<string, string | string[] | undefined>, body: string): [number, unknown] {
    const error = (status: number, type: string, message: string): [number, unknown] => [status, { __type: type, message }];
    if (this.failing) return error(500, 'InternalServiceError', 'the fake is switched to failing');
    if (!String(headers['authorization'] ?? '').startsWith('AWS4-HMAC-SHA256 ')) return error(400, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
    const target = String(headers['x-amz-target'] ?? '');
    if (target !== 'secretsmanager.GetSecretValue') return error(400, 'UnknownOperationException', `${target} is not supported by this fake`);
    let input: { SecretId?: unknown };
    try {
      input = JSON.parse(body) as { SecretId?: unknown };
    } catch {
      return error(400, 'SerializationException', 'Start of structure or map found where not expected');
    }
    if (typeof input.SecretId !== 'string' || input.SecretId === '') return error(400, 'InvalidParameterException', 'SecretId is required');
    this.reads.push(input.SecretId);
    const secret = this.secrets.get(input.SecretId);
    if (!secret) return error(400, 'ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
    return [
      200,
      {
        ARN: `arn:aws:secretsmanager:us-east-1:000000000000:secret:${input.SecretId}-AbCdEf`,
        Name: input.SecretId,
        VersionId: secret.versionId,
        SecretString: secret.value,
        VersionStages: ['AWSCURRENT'],
        CreatedDate: secret.created,
      },
    ];
  }
}

import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import { APP_CONFIG } from '@flagship/config';
import { dummySecretHash, hashSecret, verifySecret } from '@flagship/oauth';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import type { ManagementApiConfig } from '../env.schema';
import { DevIdpProblems } from './dev-idp.errors';
import { DevIdpRepository } from './dev-idp.repository';
import type { CreateDevAccountDto, DevTokenDto } from './dev-idp.dto';

const KID = 'dev-idp-1';
const TOKEN_LIFETIME_S = 3600;

/**
 * The embedded identity provider for local use and tests (IDP_MODE=dev): accounts with passwords
 * or federated sign-ins, and Firebase-shaped ID tokens (`firebase.sign_in_provider`) signed ES256.
 * Never on in production (the config refuses it).
 */
@Injectable()
export class DevIdpService {
  private key: Promise<{ privateKey: Awaited<ReturnType<typeof importJWK>>; publicJwk: JWK }> | undefined;

  constructor(
    private readonly repo: DevIdpRepository,
    @Inject(APP_CONFIG) private readonly config: ManagementApiConfig,
  ) {}

  get issuer(): string {
    return this.config.idpIssuer;
  }

  async createAccount(dto: CreateDevAccountDto): Promise<{ idToken: string; uid: string }> {
    const uid = randomBytes(21).toString('base64url');
    const displayName = dto.displayName ?? dto.email.split('@')[0];
    const emailVerified = dto.emailVerified ?? true;
    const inserted = await this.repo.insertAccount({ uid, email: dto.email, passwordHash: await hashSecret(dto.password, this.config.secretHashCost), displayName, emailVerified });
    if (!inserted) throw new ProblemException(DevIdpProblems['dev-idp-account-exists'], `An account for ${dto.email} exists; sign in instead.`);
    return { uid, idToken: await this.sign(uid, dto.email, displayName, 'password', emailVerified) };
  }

  async token(dto: DevTokenDto): Promise<{ idToken: string; uid: string }> {
    if ((dto.password === undefined) === (dto.providerName === undefined)) {
      throw validationProblem({ password: 'send either password or providerName', providerName: 'send either password or providerName' });
    }
    if (dto.password !== undefined) {
      if (dto.emailVerified !== undefined) throw validationProblem({ emailVerified: 'only with providerName; a password account keeps what it was created with' });
      const account = await this.repo.findAccountByEmail(dto.email);
      // Same work whether or not the account exists, so timing does not reveal it.
      const ok = await verifySecret(dto.password, account?.passwordHash ?? dummySecretHash(this.config.secretHashCost));
      if (!account || !ok) throw new ProblemException(DevIdpProblems['dev-idp-invalid-credentials'], 'Wrong e-mail or password.');
      return { uid: account.uid, idToken: await this.sign(account.uid, account.email, account.displayName, 'password', account.emailVerified) };
    }
    // Federated sign-in: another provider's identity, so a subject of its own (as Google's `sub` is
    // not the password account's), the same for every sign-in of this provider and e-mail.
    const uid = federatedSubject(dto.providerName!, dto.email);
    return { uid, idToken: await this.sign(uid, dto.email, dto.email.split('@')[0], dto.providerName!, dto.emailVerified ?? true) };
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    const { publicJwk } = await this.signingKey();
    return { keys: [publicJwk] };
  }

  private async sign(uid: string, email: string, name: string, provider: string, emailVerified: boolean): Promise<string> {
    const { privateKey } = await this.signingKey();
    return new SignJWT({ email, email_verified: emailVerified, name, firebase: { sign_in_provider: provider } })
      .setProtectedHeader({ alg: 'ES256', kid: KID, typ: 'JWT' })
      .setIssuer(this.issuer)
      .setAudience(this.config.IDP_AUDIENCE)
      .setSubject(uid)
      .setIssuedAt()
      .setExpirationTime(`${TOKEN_LIFETIME_S}s`)
      .sign(privateKey);
  }

  private signingKey() {
    this.key ??= this.loadOrCreateKey().catch((err: unknown) => {
      this.key = undefined;
      throw err;
    });
    return this.key;
  }

  private async loadOrCreateKey() {
    let stored = await this.repo.findKey();
    if (!stored) {
      const pair = await generateKeyPair('ES256', { extractable: true });
      await this.repo.insertKeyIfAbsent({
        kid: KID,
        publicJwk: { ...(await exportJWK(pair.publicKey)), kid: KID, alg: 'ES256', use: 'sig' },
        privateJwk: { ...(await exportJWK(pair.privateKey)), kid: KID, alg: 'ES256' },
      });
      stored = (await this.repo.findKey())!;
    }
    return { privateKey: await importJWK(stored.privateJwk as JWK, 'ES256'), publicJwk: stored.publicJwk as JWK };
  }
}

/** A federated identity's subject: derived from provider and e-mail, never an existing account's uid. */
export function federatedSubject(providerName: string, email: string): string {
  return `fed_${createHash('sha256').update(`${providerName.toLowerCase().replace(/\.com$/, '')}\n${email.toLowerCase()}`).digest('base64url').slice(0, 27)}`;
}

import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import type { Plan, SignInBootstrapResponse, SubscriptionStatus, TenantRole } from '@flagship/domain';
import { isUniqueViolation, TransactionRunner } from '@flagship/persistence';
import { CommonProblems, ProblemException, validationProblem } from '@flagship/problem-details';
import { TenantsRepository } from '../tenants/tenants.repository';
import { TenantsService } from '../tenants/tenants.service';
import { UsersRepository } from '../users/users.repository';
import type { UserEntity } from '../users/user.entity';
import { canonicalOf } from './access-decision';
import { AuthProblems } from './auth.errors';
import { CONSOLE_CALLBACK_PATH } from '../console/console-static';
import type { ManagementApiConfig } from '../env.schema';
import type { FederatedSigninDto, SignInConfigDto, SignupDto } from './auth.dto';
import { IdentityProviderAdapter } from './identity-provider.adapter';
import { type IdentityClaims, IdTokenVerifier } from './id-token.verifier';
import { PROVIDER_SEGMENTS } from './provider-segments';

/**
 * The sign-in bootstrap (seed section 5): verify the identity provider's ID token, create or find
 * the user, and answer with the active and canonical tenant context.
 */
@Injectable()
export class AuthService {
  constructor(
    private readonly transactions: TransactionRunner,
    private readonly idTokens: IdTokenVerifier,
    private readonly users: UsersRepository,
    private readonly tenants: TenantsRepository,
    private readonly tenantsService: TenantsService,
    private readonly idp: IdentityProviderAdapter,
    @Inject(APP_CONFIG) private readonly config: ManagementApiConfig,
  ) {}

  /** What the console needs to start a sign-in; in oidc mode without a console client, only the mode. */
  signInConfig(): SignInConfigDto {
    const c = this.config;
    if (c.IDP_MODE !== 'oidc') return { mode: 'dev' };
    if (c.IDP_CLIENT_ID === '') return { mode: 'oidc', issuer: c.idpIssuer };
    return {
      mode: 'oidc',
      issuer: c.idpIssuer,
      clientId: c.IDP_CLIENT_ID,
      scopes: c.idpScopes,
      redirectUri: `${c.publicBaseUrl}${CONSOLE_CALLBACK_PATH}`,
      provider: c.idpSegment,
      providerName: c.IDP_PROVIDER_NAME,
      displayName: c.IDP_DISPLAY_NAME || new URL(c.idpIssuer).host,
    };
  }

  async signup(dto: SignupDto, requestedTenant?: string): Promise<SignInBootstrapResponse> {
    const claims = await this.idTokens.verify(dto.idToken);
    if (claims.email.toLowerCase() !== dto.email.toLowerCase()) {
      throw validationProblem({ email: "does not match the ID token's e-mail" });
    }
    if (await this.users.findBySubject(claims.subject)) {
      throw new ProblemException(AuthProblems['already-signed-up'], 'This account is signed up already; log in instead.');
    }
    const user = await this.createOrClaim(claims);
    return this.bootstrap(user, 'Signed up.', requestedTenant);
  }

  async login(idToken: string, requestedTenant?: string): Promise<SignInBootstrapResponse> {
    const claims = await this.idTokens.verify(idToken);
    const user = await this.users.findBySubject(claims.subject);
    if (!user) throw new ProblemException(AuthProblems['user-not-found'], 'No account for this identity; sign up first.');
    await this.users.touch(user.id, claims.signInProvider);
    return this.bootstrap(user, 'Logged in.', requestedTenant);
  }

  async federatedSignin(segment: string, dto: FederatedSigninDto, requestedTenant?: string): Promise<SignInBootstrapResponse> {
    const accepts = PROVIDER_SEGMENTS[segment];
    if (!accepts) {
      throw new ProblemException(CommonProblems['not-found'], `Unknown sign-in provider "${segment}"; use one of ${Object.keys(PROVIDER_SEGMENTS).join(', ')}.`);
    }
    const providerName = dto.providerName.toLowerCase();
    if (!accepts(providerName)) throw validationProblem({ providerName: `does not name a ${segment} provider` });
    const claims = await this.idTokens.verify(dto.idToken);
    if (claims.signInProvider !== null && sameSignInProvider(claims.signInProvider) !== sameSignInProvider(providerName)) {
      throw new ProblemException(AuthProblems['provider-mismatch'], `The ID token was issued for ${claims.signInProvider}, not ${dto.providerName}.`);
    }
    let user = await this.users.findBySubject(claims.subject);
    if (user) await this.users.touch(user.id, dto.providerName);
    else user = await this.createOrClaim({ ...claims, signInProvider: dto.providerName });
    return this.bootstrap(user, 'Signed in.', requestedTenant);
  }

  /** Always succeeds from the caller's point of view: nothing tells whether the account exists. */
  async forgotPassword(email: string): Promise<void> {
    await this.idp.requestPasswordReset(email);
  }

  /**
   * First sign-in of an identity: the user and their personal tenant, where they are admin (plan
   * free). Invitations to other tenants wait for them to accept (GET /api/invitations), so a new
   * user never lands in a tenant they did not choose.
   */
  private async createOrClaim(claims: IdentityClaims): Promise<UserEntity> {
    // The account is bound to this e-mail (one e-mail, one user): only a provider-verified one may take it.
    if (!claims.emailVerified) {
      throw new ProblemException(
        AuthProblems['email-not-verified'],
        `The identity provider has not verified ${claims.email}; verify the e-mail address with it, then sign in again.`,
      );
    }
    try {
      return await this.transactions.run(async (m) => {
        if (await this.users.findByEmail(claims.email, m)) {
          // The e-mail belongs to another identity (another provider account): one e-mail, one user.
          throw new ProblemException(AuthProblems['already-signed-up'], 'This e-mail is signed up with another sign-in method; use that one.');
        }
        const user = await this.users.create(m, { idpSubject: claims.subject, email: claims.email, displayName: claims.name, signInProvider: claims.signInProvider });
        await this.tenantsService.createWithAdmin(m, user, {
          name: `${claims.name || claims.email.split('@')[0]}'s workspace`,
          primaryEmail: claims.email,
          contactName: claims.name,
          isSandbox: false,
        });
        return user;
      });
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw new ProblemException(AuthProblems['already-signed-up'], 'This account is signed up already; log in instead.');
      }
      throw err;
    }
  }

  private async bootstrap(user: UserEntity, message: string, requestedTenant?: string): Promise<SignInBootstrapResponse> {
    const memberships = await this.tenants.tenantsOfUser(user.id);
    const canonical = canonicalOf(memberships);
    if (!canonical) throw new ProblemException(AuthProblems['tenant-access-denied'], 'This account belongs to no tenant.');
    const active = memberships.find((x) => x.tenant.id === requestedTenant) ?? canonical;
    return {
      success: true,
      message,
      data: {
        user: { uid: user.id, email: user.email, tenant_id: active.tenant.id, role: active.role },
        subscription: { plan: active.tenant.plan as Plan, status: active.tenant.subscriptionStatus as SubscriptionStatus, billingCycle: 'monthly' },
        tenants: memberships.map((x) => ({ tenant_id: x.tenant.id, tenant_name: x.tenant.name, role: x.role })),
        active_tenant_id: active.tenant.id,
        active_tenant_role: active.role,
        canonical_tenant_id: canonical.tenant.id,
        canonical_role: canonical.role as TenantRole,
      },
    };
  }
}

/** `google.com` and `google` name the same sign-in provider; `oidc.acme` stays as it is. */
const sameSignInProvider = (name: string): string => name.toLowerCase().replace(/\.com$/, '');

import { ManagementApiFixture, PLATFORM_ADMIN, type SignedUp } from '../testing/management-api.fixture';

/**
 * Who the billing specs act as: a platform admin (who grants credits), Ada (admin of her own
 * tenant), a viewer member of Ada's tenant, and a stranger from a tenant of their own.
 */
export interface BillingCast {
  f: ManagementApiFixture;
  root: SignedUp;
  ada: SignedUp;
  viewer: SignedUp;
  stranger: SignedUp;
}

/** A management-api on this file's own database and Redis prefix, with the cast signed up. */
export async function startBillingCast(extraEnv: NodeJS.ProcessEnv = {}): Promise<BillingCast> {
  const f = await ManagementApiFixture.start(extraEnv);
  try {
    const root = await f.signUp(PLATFORM_ADMIN);
    const ada = await f.signUp();
    const viewer = await f.signUp();
    const stranger = await f.signUp();
    await f.addMember(ada, ada.tenantId, viewer.email, 'viewer', viewer);
    return { f, root, ada, viewer, stranger };
  } catch (err) {
    await f.stop();
    throw err;
  }
}

import { commonEnv, loadConfig, portEnv } from '@flagship/config';

/** The AI gateway's settings (CONTRACT.md section 1). */
export const aiGatewayEnv = { ...commonEnv, ...portEnv(3001) };

export type AiGatewayConfig = ReturnType<typeof loadAiGatewayConfig>;

export const loadAiGatewayConfig = (env: NodeJS.ProcessEnv) => loadConfig(env, aiGatewayEnv);

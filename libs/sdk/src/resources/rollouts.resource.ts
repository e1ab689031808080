import type { HttpTransport } from '../http-transport';
import type { RequestOptions } from '../sdk.types';

export type RolloutStatus = 'running' | 'paused' | 'completed' | 'rolled_back' | 'stopped';
export type RolloutDecisionKind = 'started' | 'advanced' | 'held' | 'rolled_back' | 'completed' | 'stopped' | 'paused';

export interface RolloutState {
  bindingVersion: number;
  status: RolloutStatus | string;
  /** 0-based index of the current stage. */
  stage: number;
  stageStartedAt: string;
  controlVariationId: string | null;
  treatmentVariationId: string | null;
  flagVersion: number | null;
  lastReason: string | null;
  nextCheckAt: string;
}

export interface RolloutDecision {
  id: string;
  at: string;
  decision: RolloutDecisionKind | string;
  bindingVersion: number;
  flagKey: string;
  stage: number;
  /** The treatment's percent after the decision. */
  percent: number;
  reason: string;
  /** Control and treatment figures since the stage began, and the differences with their 95% intervals. */
  figures: unknown;
  flagVersion: number | null;
}

/** A binding's guarded rollout: its plan, where it stands, and the decision log, newest first. */
export interface RolloutView {
  productKey: string;
  flagKey: string;
  plan: unknown;
  state: RolloutState | null;
  decisions: RolloutDecision[];
}

/** `/api/gateway/bindings/{productKey}/rollout`: guarded rollouts of model bindings (tenant admins). */
export class RolloutsResource {
  constructor(private readonly http: HttpTransport) {}

  async get(productKey: string, options?: RequestOptions): Promise<RolloutView> {
    return (await this.http.request<RolloutView>({ method: 'GET', path: `/api/gateway/bindings/${encodeURIComponent(productKey)}/rollout`, options })).body;
  }
}

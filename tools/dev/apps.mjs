// Where each app's build lands and how it starts; shared by the quickstart and the Docker image check.
// metricsPort: the internal port (METRICS_PORT) of /metrics and the detailed /readyz.
export const APPS = [
  { name: 'management-api', port: 3000, metricsPort: 9464 },
  { name: 'ai-gateway', port: 3001, metricsPort: 9465 },
  { name: 'billing-worker', port: 3002, metricsPort: 9466 },
  { name: 'orep-server', port: 8016, metricsPort: 9467 },
];

export const entry = (app, file = 'main') => `dist/apps/${app}/apps/${app}/src/${file}.js`;

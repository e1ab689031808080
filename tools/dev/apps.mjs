// Where each app's build lands and how it starts; shared by the quickstart and the Docker image check.
export const APPS = [
  { name: 'management-api', port: 3000 },
  { name: 'ai-gateway', port: 3001 },
  { name: 'billing-worker', port: 3002 },
  { name: 'orep-server', port: 8016 },
];

export const entry = (app, file = 'main') => `dist/apps/${app}/apps/${app}/src/${file}.js`;

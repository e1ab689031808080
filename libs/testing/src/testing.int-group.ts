import { runSpecGroup } from './spec-groups';

runSpecGroup(__filename);

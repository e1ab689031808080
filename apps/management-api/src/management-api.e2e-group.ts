import { runSpecGroup } from '@flagship/testing';

runSpecGroup(__filename);

/**
 * One Node.js line for the images and for the tests: docker/Dockerfile's NODE_MAJOR, the image it
 * pins, the Node CI fetches (tools/dev/fetch-node.mjs) and package.json's engines agree, and under CI
 * the tests run on that line.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const dockerfile = read('docker/Dockerfile');
const major = (version: string): number => Number(/^v?(\d+)\./.exec(version)![1]);

const NODE_MAJOR = Number(/^ARG NODE_MAJOR=(\d+)$/m.exec(dockerfile)?.[1]);
const pinned = /^export const NODE_VERSION = '(\d+\.\d+\.\d+)';$/m.exec(read('tools/dev/fetch-node.mjs'))?.[1];

describe('the Node.js line', () => {
  it('the Dockerfile names an LTS line after Node 20 (end of life in April 2026)', () => {
    expect([NODE_MAJOR % 2, NODE_MAJOR > 20]).toEqual([0, true]);
  });

  it("the Node CI fetches is on the Dockerfile's NODE_MAJOR", () => {
    expect(pinned).toBeDefined();
    expect(major(pinned!)).toBe(NODE_MAJOR);
  });

  it("the base image's tag is on NODE_MAJOR, and package.json's engines ask for that line", () => {
    const image = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(dockerfile)?.[1];
    expect(Number(image)).toBe(NODE_MAJOR);
    const { engines } = JSON.parse(read('package.json')) as { engines: { node: string } };
    expect(engines.node).toBe(`>=${NODE_MAJOR}`);
  });

  // .ci/run puts the fetched Node first on PATH when the machine's is another line: every test under
  // CI then runs on the Node the images ship.
  (process.env['CI'] ? it : it.skip)('under CI, the tests run on that line', () => {
    expect(major(process.versions.node)).toBe(NODE_MAJOR);
  });
});

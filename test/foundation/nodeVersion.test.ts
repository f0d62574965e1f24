import { describe, expect, it } from 'vitest';
import { MIN_NODE_MAJOR, unsupportedNodeReason } from '../../src/process/nodeVersion.js';

describe('unsupportedNodeReason', () => {
  it.each([
    ['v24.21.0', false],
    ['v22.0.0', false],
    ['v22.23.3', false],
    ['v26.10.0', false],
    ['v21.7.3', true],
    ['v20.20.2', true],
    ['v18.19.0', true],
    ['nonsense', true],
  ])('%s refused: %s', (version, refused) => {
    const reason = unsupportedNodeReason(version, '/usr/bin/node');
    expect(reason !== undefined).toBe(refused);
    if (refused) expect(reason).toContain(`Node ${MIN_NODE_MAJOR}`);
  });

  it('names the binary that is too old, so a unit picking the wrong node is found at once', () => {
    expect(unsupportedNodeReason('v20.20.2', '/usr/bin/node')).toContain('/usr/bin/node');
  });

  it('the Node running this suite is supported (CI runs it on 24 and 22)', () => {
    expect(unsupportedNodeReason(process.version)).toBeUndefined();
  });
});

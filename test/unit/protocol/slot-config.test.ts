// What the front sends a slot process as its configuration: everything a job needs,
// no secret.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../../src/common/config.js';
import { slotConfig } from '../../../src/protocol/slot-wire.js';

test('the configuration sent to a slot process has no API key, key-file path, Redis URL or metrics token', () => {
  const secrets = {
    API_KEYS: 'secret-key-0123456789abcdef',
    API_KEYS_FILE: '/srv/secret/keys.json',
    REDIS_URL: 'redis://user:redis-password@10.0.0.5:6379/2',
    METRICS_TOKEN: 'metrics-token-secret-0123',
  };
  const config = loadConfig({ ...secrets, SCRIPT_TIMEOUT_MS: '1234' });
  const sent = JSON.stringify(slotConfig(config));
  for (const value of ['secret-key-0123456789abcdef', 'keys.json', 'redis-password', 'metrics-token-secret-0123'])
    assert.ok(!sent.includes(value), `${value} is sent`);
  assert.equal(slotConfig(config).scriptTimeoutMs, 1234, 'control: the job settings are sent');
});

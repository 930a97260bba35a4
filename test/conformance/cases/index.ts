// Every case of the conformance suite, in the order the suite runs them.
import type { Case } from '../harness.js';
import { cases as checks } from './checks.js';
import { cases as consoleCases } from './console.js';
import { cases as cookies } from './cookies.js';
import { cases as devices } from './devices.js';
import { cases as evaluation } from './evaluation.js';
import { cases as filechooser } from './filechooser.js';
import { cases as input } from './input.js';
import { cases as locator } from './locator.js';
import { cases as network } from './network.js';
import { cases as pageCases } from './page.js';
import { cases as queryhandler } from './queryhandler.js';
import { cases as queryselector } from './queryselector.js';
import { cases as requestinterception } from './requestinterception.js';
import { cases as screenshot } from './screenshot.js';
import { cases as upstream } from './upstream.js';
import { cases as upstreamRest } from './upstream-rest.js';

export const ALL_CASES: readonly Case[] = [
  ...evaluation,
  ...queryselector,
  ...queryhandler,
  ...pageCases,
  ...consoleCases,
  ...input,
  ...devices,
  ...locator,
  ...filechooser,
  ...network,
  ...requestinterception,
  ...cookies,
  ...screenshot,
  ...checks,
  ...upstream,
  ...upstreamRest,
];

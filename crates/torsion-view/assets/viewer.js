// torsion viewer (issue 18): plays back the inlined trajectories of one model. three.js and OrbitControls are
// inlined as text and imported through blob: URLs, so the page works offline from file://.
// Test hook: window.torsionViewer; with "#selftest" in the URL the page writes the hook's state into
// the element #torsion-test (read by crates/torsion-cli/tests/browser.rs through chromium --dump-dom); "#frame=K"
// opens the page at frame K.
const hook = {
  ready: false, meshCount: 0, cableCount: 0, frameCount: 0, bodyCount: 0, jointFrameCount: 0, errors: [],
  setFrame() {}, bodyPosition() { return null; }, bodyPose() { return null; }, nonBlankPixels() { return 0; },
  visibleContacts() { return 0; }, cableEnds() { return []; }, showJointFrames() {}, jointFramePose() { return null; },
};
window.torsionViewer = hook;
const report = (m) => hook.errors.push(String(m));
window.addEventListener('error', (e) => report(e.message || e));
window.addEventListener('unhandledrejection', (e) => report((e.reason && e.reason.message) || e.reason));
const consoleError = console.error.bind(console);
console.error = (...a) => { report(a.join(' ')); consoleError(...a); };
const testOut = document.getElementById('torsion-test');
const selftest = location.hash.includes('selftest');

try {
  await main();
} catch (e) {
  report((e && e.stack) || e);
}
if (selftest) runSelfTest();

async function main() {
  const text = (id) => document.getElementById(id).textContent;
  const blob = (s) => URL.createObjectURL(new Blob([s], { type: 'text/javascript' }));
  const coreUrl = blob(text('three-core'));
  const moduleUrl = blob(text('three-module').replace(/(from\s*)(["'])\.\/three\.core\.js\2/g, (_, f) => f + JSON.stringify(coreUrl)));
  const orbitUrl = blob(text('three-orbit').replace(/(from\s*)(["'])three\2/g, (_, f) => f + JSON.stringify(moduleUrl)));
  const THREE = await import(moduleUrl);
  const { OrbitControls } = await import(orbitUrl);
  const data = JSON.parse(text('torsion-data'));
  const { scene: model, trajectories: trajs } = data;
  const nFrames = Math.max(...trajs.map((t) => t.time.length));
  hook.frameCount = nFrames;
  hook.bodyCount = model.body_names.length;

  // --- renderer, camera (z up, as torsion), lights
  THREE.Object3D.DEFAULT_UP.set(0, 0, 1);
  const host = document.getElementById('scene');
  const background = new THREE.Color(0xf4f5f7);
  const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(window.devicePixelRatio || 1);
  renderer.setClearColor(background);
  host.appendChild(renderer.domElement);
  const scene = new THREE.Scene();
  const camera = new THREE.PerspectiveCamera(45, 1, 0.01, 1000);
  camera.up.set(0, 0, 1);
  scene.add(new THREE.HemisphereLight(0xffffff, 0x667788, 1.6));
  const sun = new THREE.DirectionalLight(0xffffff, 1.6);
  sun.position.set(3, -4, 6);
  scene.add(sun);
  const controls = new OrbitControls(camera, renderer.domElement);

  // --- shapes: geometry in the shape frame (capsule / cylinder axis z; three.js builds them along y)
  const geometry = (s) => {
    switch (s.kind) {
      case 'sphere': return new THREE.SphereGeometry(s.radius, 24, 16);
      case 'ellipsoid': return new THREE.SphereGeometry(1, 24, 16).scale(...s.radii);
      case 'box': return new THREE.BoxGeometry(...s.half_extents.map((e) => 2 * e));
      case 'cylinder': return new THREE.CylinderGeometry(s.radius, s.radius, 2 * s.half_length, 24).rotateX(Math.PI / 2);
      case 'capsule': return new THREE.CapsuleGeometry(s.radius, 2 * s.half_length, 8, 16).rotateX(Math.PI / 2);
      case 'plane': {
        const [hx, hy] = s.half_extents;
        return new THREE.PlaneGeometry(hx > 0 ? 2 * hx : 20, hy > 0 ? 2 * hy : 20);
      }
      case 'mesh': {
        const g = new THREE.BufferGeometry();
        g.setAttribute('position', new THREE.Float32BufferAttribute(s.vertices, 3));
        g.setIndex(s.triangles);
        g.computeVertexNormals();
        return g;
      }
      default: throw new Error(`shape '${s.name}': unknown kind ${s.kind}`);
    }
  };
  const geoms = model.shapes.map(geometry);
  const nb = model.body_names.length;
  // per trajectory: one group per body (posed each frame); the world's shapes (body 0) once
  const views = trajs.map((t, ti) => {
    const colour = new THREE.Color(t.colour);
    const bodies = [];
    for (let b = 0; b < nb; b++) {
      const g = new THREE.Group();
      g.name = `${t.name}:${model.body_names[b]}`;
      scene.add(g);
      bodies.push(g);
    }
    model.shapes.forEach((s, si) => {
      if (s.body === 0 && ti > 0) return;
      const world = s.body === 0;
      const c = world ? new THREE.Color(s.kind === 'plane' ? 0xd8dce2 : 0x9aa0a8) : colour.clone().offsetHSL(0, 0, ((s.body % 3) - 1) * 0.08);
      const mat = new THREE.MeshStandardMaterial({
        color: c, roughness: 0.7, metalness: 0.05, flatShading: s.kind === 'mesh',
        side: s.kind === 'plane' ? THREE.DoubleSide : THREE.FrontSide,
        transparent: ti > 0, opacity: ti > 0 ? 0.55 : 1,
      });
      const m = new THREE.Mesh(geoms[si], mat);
      m.position.set(...s.pos);
      m.quaternion.set(s.quat[1], s.quat[2], s.quat[3], s.quat[0]);
      m.name = s.name;
      bodies[s.body].add(m);
      hook.meshCount += 1;
    });
    // cables: one line each, through the two end sites
    const cables = model.cables.map((c) => {
      const g = new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(), new THREE.Vector3()]);
      const line = new THREE.Line(g, new THREE.LineBasicMaterial({ color: colour }));
      scene.add(line);
      hook.cableCount += 1;
      return line;
    });
    // joint frames (first trajectory; hidden until "joint frames" is ticked): axes on the child body at the joint
    const jointAxes = ti > 0 ? [] : (model.joints || []).map((j) => {
      const a = new THREE.AxesHelper(1);
      a.position.set(...j.pos);
      a.quaternion.set(j.quat[1], j.quat[2], j.quat[3], j.quat[0]);
      a.name = `joint:${j.name}`;
      a.visible = false;
      a.traverse((o) => { if (o.material) o.material.depthTest = false; o.renderOrder = 11; });
      bodies[j.body].add(a);
      hook.jointFrameCount += 1;
      return a;
    });
    const maxTension = t.cable_tensions ? Math.max(1e-12, ...t.cable_tensions.flat().map(Math.abs)) : 0;
    // contacts: points and normal-impulse arrows, a pool grown on demand
    // arrow scale: the 90th percentile of the non-zero impulses (an impact's spike would shrink the rest)
    const imps = t.contacts ? t.contacts.flat().map((c) => Math.abs(c[2])).filter((x) => x > 0).sort((a, b) => a - b) : [];
    const refImpulse = imps.length ? imps[Math.floor(0.9 * (imps.length - 1))] : 1;
    const arrows = [];
    return { t, bodies, cables, jointAxes, maxTension, arrows, refImpulse, colour };
  });

  // --- scale of the scene (contact arrows, camera): the bodies' origins at frame 0 and the shapes' centres
  const box = new THREE.Box3();
  const p0 = views[0].t.body_poses[0];
  p0.forEach((p) => box.expandByPoint(new THREE.Vector3(p[0], p[1], p[2])));
  model.shapes.forEach((s) => {
    if (s.kind !== 'plane') box.expandByPoint(new THREE.Vector3(...s.pos).applyQuaternion(new THREE.Quaternion(p0[s.body][4], p0[s.body][5], p0[s.body][6], p0[s.body][3])).add(new THREE.Vector3(...p0[s.body])));
  });
  const size = Math.max(0.3, box.getSize(new THREE.Vector3()).length());
  const arrowLength = 0.15 * size;

  // --- frames
  const slider = document.getElementById('slider');
  const timeLabel = document.getElementById('time');
  const showContacts = document.getElementById('show-contacts');
  showContacts.parentElement.hidden = !trajs.some((t) => t.contacts);
  slider.max = String(nFrames - 1);
  let frame = 0;
  const v3 = (a) => new THREE.Vector3(a[0], a[1], a[2]);
  const worldSite = (pose, site) =>
    v3(site).applyQuaternion(new THREE.Quaternion(pose[4], pose[5], pose[6], pose[3])).add(v3(pose));
  function setFrame(k) {
    frame = Math.max(0, Math.min(nFrames - 1, Math.round(k)));
    for (const v of views) {
      const kk = Math.min(frame, v.t.time.length - 1);
      const poses = v.t.body_poses[kk];
      v.bodies.forEach((g, b) => {
        const p = poses[b];
        g.position.set(p[0], p[1], p[2]);
        g.quaternion.set(p[4], p[5], p[6], p[3]);
      });
      model.cables.forEach((c, ci) => {
        const pts = [worldSite(poses[c.body[0]], c.site[0]), worldSite(poses[c.body[1]], c.site[1])];
        v.cables[ci].geometry.setFromPoints(pts);
        if (v.t.cable_tensions) {
          const x = Math.min(1, Math.abs(v.t.cable_tensions[kk][ci]) / v.maxTension);
          v.cables[ci].material.color.setRGB(0.2 + 0.8 * x, 0.3 * (1 - x), 1 - x);
        }
      });
      const cs = (v.t.contacts && showContacts.checked) ? v.t.contacts[kk] : [];
      while (v.arrows.length < cs.length) {
        const a = new THREE.ArrowHelper(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 1, 0xd62728);
        const dot = new THREE.Mesh(new THREE.SphereGeometry(0.01 * size, 8, 6), new THREE.MeshBasicMaterial({ color: 0xd62728 }));
        a.add(dot);
        // drawn over the solids: the force acts inside the touching bodies
        a.traverse((o) => { if (o.material) o.material.depthTest = false; o.renderOrder = 10; });
        scene.add(a);
        v.arrows.push(a);
      }
      v.arrows.forEach((a, i) => {
        a.visible = i < cs.length;
        if (!a.visible) return;
        const [p, n, imp] = cs[i];
        a.position.set(...p);
        a.setDirection(v3(n).normalize());
        const len = Math.min(0.4 * size, Math.max(1e-3, arrowLength * Math.abs(imp) / v.refImpulse));
        a.setLength(len, Math.min(0.3 * len, 0.04 * size), Math.min(0.2 * len, 0.02 * size));
      });
    }
    slider.value = String(frame);
    const t0 = views[0].t.time;
    timeLabel.textContent = `t = ${t0[Math.min(frame, t0.length - 1)].toFixed(3)} s`;
    drawPlot();
    render();
  }
  hook.setFrame = setFrame;
  const showJoints = document.getElementById('show-joints');
  const jointAxisLength = 0.08 * size;
  views[0].jointAxes.forEach((a) => a.scale.setScalar(jointAxisLength));
  const applyJoints = () => { views[0].jointAxes.forEach((a) => { a.visible = showJoints.checked; }); render(); };
  showJoints.addEventListener('change', applyJoints);
  hook.showJointFrames = (on) => { showJoints.checked = !!on; applyJoints(); };
  // world pose [x y z qw qx qy qz] of joint frame i as drawn (and whether it is visible)
  hook.jointFramePose = (i) => {
    const a = views[0].jointAxes[i];
    a.updateMatrixWorld(true);
    const p = new THREE.Vector3(), q = new THREE.Quaternion(), s = new THREE.Vector3();
    a.matrixWorld.decompose(p, q, s);
    return { pose: [p.x, p.y, p.z, q.w, q.x, q.y, q.z], visible: a.visible };
  };
  hook.bodyPose = (i, ti = 0) => {
    const g = views[ti].bodies[i];
    g.updateMatrixWorld(true);
    const p = new THREE.Vector3(), q = new THREE.Quaternion(), s = new THREE.Vector3();
    g.matrixWorld.decompose(p, q, s);
    return [p.x, p.y, p.z, q.w, q.x, q.y, q.z];
  };
  // the drawn end points of trajectory ti's cables, [[x y z] [x y z]] each
  hook.cableEnds = (ti = 0) => views[ti].cables.map((l) => {
    const p = l.geometry.getAttribute('position');
    return [0, 1].map((i) => [p.getX(i), p.getY(i), p.getZ(i)]);
  });
  hook.visibleContacts = (ti = 0) => views[ti].arrows.filter((a) => a.visible).length;
  hook.bodyPosition = (i, ti = 0) => {
    const g = views[ti].bodies[i];
    g.updateMatrixWorld(true);
    const p = new THREE.Vector3().setFromMatrixPosition(g.matrixWorld);
    return [p.x, p.y, p.z];
  };

  // --- plot strip: joint angles over time, one colour per coordinate; later trajectories dashed; cursor
  const plot = document.getElementById('plot');
  const pctx = plot.getContext('2d');
  const series = trajs.map((t) => t.joint_angles);
  const allAngles = series.flat(2);
  const lo = allAngles.length ? Math.min(...allAngles) : -1, hi = allAngles.length ? Math.max(...allAngles) : 1;
  const tMax = Math.max(...trajs.map((t) => t.time[t.time.length - 1])) || 1;
  function drawPlot() {
    const w = plot.clientWidth, h = plot.clientHeight, pad = 28;
    if (plot.width !== w || plot.height !== h) { plot.width = w; plot.height = h; }
    pctx.clearRect(0, 0, w, h);
    const X = (t) => pad + (w - 2 * pad) * t / tMax;
    const Y = (y) => h - 12 - (h - 24) * (hi > lo ? (y - lo) / (hi - lo) : 0.5);
    pctx.fillStyle = '#555';
    pctx.fillText(`joint coordinates  [${lo.toFixed(2)}, ${hi.toFixed(2)}]`, pad, 11);
    trajs.forEach((t, ti) => {
      pctx.setLineDash(ti > 0 ? [5, 3] : []);
      const nj = t.joint_angles.length ? t.joint_angles[0].length : 0;
      for (let j = 0; j < nj; j++) {
        pctx.strokeStyle = `hsl(${(j * 137) % 360}, 60%, ${ti > 0 ? 62 : 45}%)`;
        pctx.beginPath();
        t.joint_angles.forEach((row, k) => (k ? pctx.lineTo : pctx.moveTo).call(pctx, X(t.time[k]), Y(row[j])));
        pctx.stroke();
      }
    });
    pctx.setLineDash([]);
    const t0 = trajs[0].time;
    const xc = X(t0[Math.min(frame, t0.length - 1)]);
    pctx.strokeStyle = '#000';
    pctx.beginPath(); pctx.moveTo(xc, 14); pctx.lineTo(xc, h); pctx.stroke();
  }

  // --- legend
  document.getElementById('legend').innerHTML = '';
  for (const t of trajs) {
    const row = document.createElement('div');
    const sw = document.createElement('span');
    sw.style.background = t.colour;
    row.append(sw, `${t.name}${t.contacts ? ' (contacts)' : ''}`);
    document.getElementById('legend').append(row);
  }

  // --- size, render, playback
  function resize() {
    const w = host.clientWidth || 800, h = host.clientHeight || 500;
    renderer.setSize(w, h);
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
  }
  function render() { renderer.render(scene, camera); }
  window.addEventListener('resize', () => { resize(); drawPlot(); render(); });
  controls.addEventListener('change', render);
  slider.addEventListener('input', () => setFrame(Number(slider.value)));
  showContacts.addEventListener('change', () => setFrame(frame));
  const playButton = document.getElementById('play');
  const speed = document.getElementById('speed');
  let playing = false, simTime = 0, last = 0;
  function tick(now) {
    if (!playing) return;
    const t0 = trajs[0].time;
    simTime += Math.min(0.1, (now - last) / 1000) * Number(speed.value);
    last = now;
    if (simTime > t0[t0.length - 1]) simTime = t0[0];
    let k = 0;
    while (k + 1 < t0.length && t0[k + 1] <= simTime) k++;
    setFrame(k);
    requestAnimationFrame(tick);
  }
  const toggle = () => {
    playing = !playing;
    playButton.innerHTML = playing ? '&#10074;&#10074;' : '&#9654;';
    if (playing) {
      simTime = trajs[0].time[Math.min(frame, trajs[0].time.length - 1)];
      last = performance.now();
      requestAnimationFrame(tick);
    }
  };
  playButton.addEventListener('click', toggle);
  window.addEventListener('keydown', (e) => { if (e.key === ' ') { e.preventDefault(); toggle(); } });

  // non-background pixels of the last render (preserveDrawingBuffer keeps it readable)
  hook.nonBlankPixels = () => {
    render();
    const c = renderer.domElement;
    const off = document.createElement('canvas');
    off.width = c.width; off.height = c.height;
    const ctx = off.getContext('2d');
    ctx.drawImage(c, 0, 0);
    const px = ctx.getImageData(0, 0, c.width, c.height).data;
    const ref = new THREE.Color(background).getStyle(); // "rgb(r,g,b)" in sRGB
    const [r0, g0, b0] = ref.match(/\d+/g).map(Number);
    let n = 0;
    for (let i = 0; i < px.length; i += 4) {
      if (Math.abs(px[i] - r0) + Math.abs(px[i + 1] - g0) + Math.abs(px[i + 2] - b0) > 12) n++;
    }
    return n;
  };
  resize();
  setFrame(0);
  // fit the camera to the shapes at frame 0 (planes left out)
  const fit = new THREE.Box3();
  scene.updateMatrixWorld(true);
  views[0].bodies.forEach((g) => g.children.forEach((m) => {
    if (m.geometry && m.geometry.type !== 'PlaneGeometry') fit.expandByObject(m);
  }));
  if (fit.isEmpty()) fit.copy(box);
  const fitSize = Math.max(0.2, fit.getSize(new THREE.Vector3()).length());
  const centre = fit.getCenter(new THREE.Vector3());
  // the bounding sphere (radius fitSize / 2) fills the vertical field of view
  const distance = (0.5 * fitSize) / Math.sin(THREE.MathUtils.degToRad(camera.fov / 2));
  camera.position.copy(centre).add(new THREE.Vector3(0.55, -0.75, 0.4).normalize().multiplyScalar(distance));
  controls.target.copy(centre);
  controls.update();
  // "#frame=K" in the URL opens the page at frame K (screenshots)
  const start = /frame=(\d+)/.exec(location.hash);
  setFrame(start ? Number(start[1]) : 0);
  hook.ready = true;
}

function runSelfTest() {
  const out = {
    ready: hook.ready, meshCount: hook.meshCount, cableCount: hook.cableCount, frameCount: hook.frameCount,
    jointFrameCount: hook.jointFrameCount,
    nonBlank: 0, poses: {}, contacts: {}, cableEnds: {},
  };
  try {
    if (hook.ready) {
      out.nonBlank = hook.nonBlankPixels();
      const n = hook.frameCount;
      for (const k of [n - 1, Math.floor(n / 2), 0]) {
        hook.setFrame(k);
        out.contacts[k] = hook.visibleContacts();
        out.cableEnds[k] = hook.cableEnds();
        out.poses[k] = [];
        for (let i = 0; i < hook.bodyCount; i++) out.poses[k].push(hook.bodyPose(i));
      }
      // joint frames at frame 0, shown
      hook.showJointFrames(true);
      out.jointFrames = [];
      for (let i = 0; i < hook.jointFrameCount; i++) out.jointFrames.push(hook.jointFramePose(i));
      hook.showJointFrames(false);
    }
  } catch (e) {
    report((e && e.stack) || e);
  }
  out.errors = hook.errors;
  testOut.textContent = JSON.stringify(out);
}

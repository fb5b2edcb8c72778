// Draws the charts of a spate report from the JSON in #spate-data with the
// embedded ECharts, and marks each chart's container data-rendered="1" once
// ECharts has finished drawing it (the end-to-end test reads the marks).
(function () {
  "use strict";
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function fmt(v) {
    if (typeof v !== "number" || !isFinite(v)) return "-";
    var a = Math.abs(v);
    if (a === 0) return "0";
    if (a < 10) return v.toFixed(2);
    if (a < 100) return v.toFixed(1);
    return v.toFixed(0);
  }
  function pctLabel(x) {
    if (x <= 1) return "p0";
    var p = 100 * (1 - 1 / x);
    return "p" + String(Math.round(p * 1000) / 1000);
  }
  function option(c) {
    var xAxis = { type: "value", name: c.x_name, nameLocation: "middle", nameGap: 26, scale: true };
    if (c.x_axis === "category") {
      xAxis = { type: "category", name: c.x_name, nameLocation: "middle", nameGap: 26, data: c.categories };
    }
    if (c.x_axis === "log" || c.x_axis === "percentile") {
      xAxis.type = "log";
      xAxis.logBase = 10;
      xAxis.scale = false;
      xAxis.min = 1;
      if (c.x_axis === "percentile") xAxis.axisLabel = { formatter: pctLabel };
    }
    var series = c.series.map(function (s, i) {
      var o = {
        name: s.name, type: c.bars ? "bar" : "line", data: s.points, showSymbol: !!c.scatter, symbolSize: 6,
        step: s.step ? "middle" : false, lineStyle: { width: 1.6, type: s.dashed ? "dashed" : "solid" },
        emphasis: { focus: "series" }
      };
      if (i === 0 && c.marks && c.marks.length) {
        o.markLine = {
          silent: true, symbol: "none", lineStyle: { type: "dashed", color: "#888" },
          label: { formatter: function (p) { return p.name; }, position: "insideEndTop", fontSize: 10 },
          data: c.marks.map(function (m) { return { xAxis: m.x, name: m.label }; })
        };
      }
      return o;
    });
    return {
      animation: false,
      title: { text: c.title, left: 8, top: 6, textStyle: { fontSize: 14 } },
      grid: { left: 64, right: 28, top: 84, bottom: 48 },
      legend: { type: "scroll", top: 30, left: 8, right: 8 },
      tooltip: {
        trigger: "item",
        formatter: function (p) {
          var x = c.x_axis === "percentile" ? pctLabel(p.value[0]) :
            c.x_axis === "category" ? (c.x_name + " " + c.categories[p.value[0]]) : (c.x_name + " " + fmt(p.value[0]));
          return esc(p.seriesName) + "<br>" + esc(x) + ": <b>" + fmt(p.value[1]) + "</b> " + esc(c.y_name);
        }
      },
      xAxis: xAxis,
      yAxis: { type: "value", name: c.y_name, nameTextStyle: { align: "left" }, scale: c.y_name === "ms" },
      series: series
    };
  }
  var data = JSON.parse(document.getElementById("spate-data").textContent);
  var charts = [];
  ["latency", "timeline", "server", "sweep", "breakdown"].forEach(function (k) {
    (data[k] || []).forEach(function (c) { charts.push(c); });
  });
  var rendered = 0;
  charts.forEach(function (c) {
    var el = document.getElementById(c.id);
    if (!el) { window.spateErrors.push("no container for chart " + c.id); return; }
    try {
      var chart = echarts.init(el);
      chart.on("finished", function () {
        // Only a chart that holds every one of its series counts as drawn.
        var o = chart.getOption();
        if (!o || !o.series || o.series.length !== c.series.length) return;
        if (el.dataset.rendered !== "1") {
          el.dataset.rendered = "1";
          rendered++;
          document.body.dataset.rendered = String(rendered);
        }
      });
      chart.setOption(option(c));
      window.addEventListener("resize", function () { chart.resize(); });
    } catch (e) {
      window.spateErrors.push("chart " + c.id + ": " + e);
    }
  });
  function report() {
    var pre = document.getElementById("spate-errors");
    pre.textContent = window.spateErrors.join("\n");
    document.body.dataset.errors = String(window.spateErrors.length);
  }
  report();
  window.setTimeout(report, 1000);
})();

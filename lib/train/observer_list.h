#pragma once
// Fans each trainer hook out to several observers, in the order they were added.
#include <vector>

#include "train/trainer.h"

namespace ra::train {

class ObserverList final : public Observer {
 public:
  void add(Observer* o) {
    if (o != nullptr) observers_.push_back(o);
  }
  void on_start(const Trainer& t) override {
    for (Observer* o : observers_) o->on_start(t);
  }
  void before_step(data::Batch& b, std::int64_t step) override {
    for (Observer* o : observers_) o->before_step(b, step);
  }
  bool after_update(nn::Model& m, std::int64_t step) override {
    bool changed = false;
    for (Observer* o : observers_) changed = o->after_update(m, step) || changed;
    return changed;
  }
  bool wants_update_digests() const override {
    for (const Observer* o : observers_) {
      if (o->wants_update_digests()) return true;
    }
    return false;
  }
  void on_step(const Trainer& t, const StepEvent& e) override {
    for (Observer* o : observers_) o->on_step(t, e);
  }
  void on_epoch(const Trainer& t, const EpochSummary& s) override {
    for (Observer* o : observers_) o->on_epoch(t, s);
  }
  void on_run_end(const Trainer& t) override {
    for (Observer* o : observers_) o->on_run_end(t);
  }

 private:
  std::vector<Observer*> observers_;
};

}  // namespace ra::train
